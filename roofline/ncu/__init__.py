"""Nsight Compute (`ncu`) support, one job per module:

  metrics    the metric names roofline asks ncu for, and the lists it prints
  table      `ncu --csv --page raw` text -> kernel launches (numbers in SI base units), and why ncu gave nothing
  counters   one launch's metrics -> roofline's counters (bytes per level, time, FLOPs per kind of work)
  placement  a launch's work -> the roof that bounds it (each part timed at its own roof)
  importer   `roofline import ncu`: a capture of any program -> a results document
  profile    `roofline measure --profile ncu`: run the measured kernels under ncu, merge their counters
  target     the program ncu runs for `measure --profile ncu` (`python -m roofline.ncu.target PLAN DONE`)
"""
