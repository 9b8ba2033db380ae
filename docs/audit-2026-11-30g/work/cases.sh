# case sets (5 steps, gen.py's families: dit*/sd3 4 items, flux 2 prompts x 2 seeds)
CC=( 'cfg2|cfg_parallel: 2' 'dp2|dp: 2' )      # sc: 01 sd3, 04 dit, 06 ditp
CU=( 'dp2|dp: 2' 'uly2|ulysses: 2' )           # su: 02 dit sd3, 03 dit sd3, 05 sd3 flux
