// multi-process rig (next)
