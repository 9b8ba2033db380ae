# case sets (audit 10's gen.py families, 5 steps, threads 1 unless said, 4 items). Named <set>-<family> in tables.
CS=( 'dp2|dp: 2' 'uly2|ulysses: 2' 'ring2|ring: 2' 'cfg2|cfg_parallel: 2' )   # s: sd3; sn: sd3 at 128x64 px
                                                                                # (non-square); mp: sd3, 2 prompts
CF=( 'dp2|dp: 2' 'uly2|ulysses: 2' 'ring2|ring: 2' )                          # fn: flux 128x64 (non-square);
                                                                                # f64: flux 64x64 (non-native);
                                                                                # fg: flux guidance 5
CT=( 'dp2|dp: 2' 'uly2|ulysses: 2' 'ring2|ring: 2' 'cfg2|cfg_parallel: 2' )   # t2: dit at threads 2
CD=( 'dp2|dp: 2' 'dp4|dp: 4' )                                                # d4: dit, 4 items, dp 4
PROMPTS_MP='["a red fox in the snow", "two cats"]'; SEEDS_MP='[0, 1]'          # mp: items p0s0 p0s1 p1s0 p1s1
CC=( 'dp2|dp: 2' 'dp4|dp: 4' 'uly2|ulysses: 2' 'cfg2|cfg_parallel: 2' )        # dc: dit-digits, classes [1, 7] x
SEDX_DC='s|^seeds: .*|seeds: [0, 1]\nclasses: [1, 7]|'                          # seeds [0, 1]: c1s0 c1s1 c7s0 c7s1
