# Sourced by run-tests and gpu-check inside an unpacked bundle: where its data and CUDA
# libraries are. Sets nothing the bundle's RPATH already covers.
bundle_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
export NOEIRA_DATA=${NOEIRA_DATA:-$bundle_dir/data}
export NOEIRA_HOME=$bundle_dir/share/noeira-bench
# The CUDA toolkit's libraries (the binaries' RPATH names these folders too). Never a
# system library folder here: LD_LIBRARY_PATH outranks the bundled libraries' RUNPATH.
for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64; do
  case ":${LD_LIBRARY_PATH:-}:" in *":$d:"*) ;; *) [ -d "$d" ] && LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d ;; esac
done
export LD_LIBRARY_PATH
# One test at a time shares the cores; OpenMP threads wait passively between regions.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
