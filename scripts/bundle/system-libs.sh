# Sourced by scripts/gpu-bundle (what not to bundle) and the bundle's run-tests (what may
# come from the system): the libraries every target machine brings itself.

# glibc and the loader: always the target machine's own.
is_system_lib() {
  case "$(basename "$1")" in
    linux-vdso* | ld-linux* | libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | \
      libutil.so* | libresolv.so* | libanl.so* | libnsl.so* | libmvec.so*) return 0 ;;
  esac
  return 1
}

# The NVIDIA driver's and the CUDA toolkit's libraries: the GPU machine's own.
is_cuda_lib() {
  case "$1" in /usr/local/cuda*) return 0 ;; esac
  case "$(basename "$1")" in
    libcuda.so* | libnvidia-* | libcudart* | libcublas* | libcupti* | libcudnn* | libnccl*) return 0 ;;
  esac
  return 1
}
