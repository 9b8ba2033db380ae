# case sets (4 items, 5 steps)
DIT=( 'dp2|dp: 2' 'cfg2|cfg_parallel: 2' 'patch2 w1|patch: 2, warmup_steps: 1' )
SD3=( 'dp2|dp: 2' 'cfg2|cfg_parallel: 2' 'patch2 w1|patch: 2, warmup_steps: 1' 'uly2|ulysses: 2' )
FLUX=( 'dp2|dp: 2' 'uly2|ulysses: 2' )
