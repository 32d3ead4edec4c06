"""`graphcost collect`: zoo programs x configurations -> measured TpuGraphs-schema npz files.

`jobs`: a collection's parameters (`CollectOptions`), the program selection and each graph's
configurations ready to measure (`prepare_job`); `local`: the collection loop on this machine,
the manifest, resume and `repeat_collection`; `ray_backend`: the same collection on a Ray
cluster; `card`: the data card written from a collection's manifest; `merge`: several collections
laid out as one training directory. It sits above `graphcost.measure` (the timing),
`graphcost.frontend` (the programs and their spaces) and `graphcost.kernels` (a program's kernel records).
"""
