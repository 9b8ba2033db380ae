# case sets (gen.py's families, 5 steps, threads 1); a plant runs a subset under the same set / case names
CS=( 'dp2|dp: 2' 'uly2|ulysses: 2' 'ring2|ring: 2' 'cfg2|cfg_parallel: 2' )                                  # s: sd3
CT=( 'dp2|dp: 2' 'uly2|ulysses: 2' 'ring2|ring: 2' 'cfg2|cfg_parallel: 2' 'dp2cfg2|dp: 2, cfg_parallel: 2' ) # t: dit
CF=( 'dp2|dp: 2' 'uly2|ulysses: 2' 'ring2|ring: 2' )                                                         # f: flux
