# Sourced by the benchmarks/h200_*.sh device scripts: `device_env FILE` writes what ran where (date, GPU, driver, power
# limit, max SM clock, CuPy / torch / ncu versions, the tree's commit) to FILE and prints it.
device_env() {
  { date -u; nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
    python3 -c 'import cupy, torch; print("cupy", cupy.__version__, "torch", torch.__version__)'
    ncu --version 2>/dev/null | tail -1; git log --oneline -1 2>/dev/null | cut -c1-60
  } > "$1" 2>&1
  cat "$1"
}
