# case sets (5 steps, gen.py's families: dit*/sd3 4 items, flux 2 prompts x 2 seeds)
C01=( 'dp2|dp: 2' 'cfg2|cfg_parallel: 2' )                                                   # 01 ditp, 02 / 05 ditm
C03=( 'rsplit|reduce_split: 1' 'dp2 rsplit|dp: 2, reduce_split: 1' 'dp2|dp: 2' )              # 03 dit, sd3
C04=( 't2|threads: 2' 'dp2 t2|dp: 2, threads: 2' )                                           # 04 dit, sd3
C06=( 'uly2|ulysses: 2' 'dp2|dp: 2' )                                                        # 06 sd3, flux
