"""Peak memory, time to target and energy of one twin run: the result row's `memory`,
`time_to_target` and `energy`, in the shapes of our results file (runs[].memory, ...;
results/SCHEMA.md, "Memory, time to target, energy"), measured the way our side measures
them:

- memory: the process's resident-set peak (getrusage ru_maxrss; the harness starts a fresh
  process per run, so it is this run's, torch's import included) and, on CUDA, torch's
  allocator peaks (max_memory_allocated / max_memory_reserved).
- time to target: from the first touch of the data (reading its files) to the end of the
  first evaluation whose score reaches --target-score (evaluations after every epoch, the
  gpt family's every eval_interval, until it is reached; their time included, as MLPerf).
- energy: over the timed steps (evaluations left out), NVML's total-energy counter read
  through ctypes from libnvidia-ml.so.1 (no pynvml needed: the counter our harness reads)
  on CUDA, RAPL's package counters (/sys/class/powercap/intel-rapl:<N>/energy_uj) on the
  CPU; where there is none, {available: false, why}.
Stdlib only; torch is passed in."""
from __future__ import annotations

import ctypes
import glob
import math
import os
import resource
import time


class TargetClock:
    """The time to target of one run; metric None: not measured."""

    def __init__(self, metric, target):
        self.metric = metric
        self.target = target
        self.origin = None
        self.reached = False
        self.seconds = None
        self.step = None
        self.score = None
        self.evaluations = 0

    @property
    def tracking(self):
        return self.metric is not None

    @property
    def wants_evaluation(self):
        return self.tracking and not self.reached

    def touch(self):
        """The first touch of the data: the clock starts (once)."""
        if self.origin is None:
            self.origin = time.perf_counter()

    def evaluated(self, score, step):
        if not self.wants_evaluation or self.origin is None:
            return
        self.evaluations += 1
        if score is None or not math.isfinite(score):
            return
        ok = score >= self.target if self.metric == "test_top1" else score <= self.target
        if ok:
            self.reached = True
            self.seconds = time.perf_counter() - self.origin
            self.step = int(step)
            self.score = float(score)

    def record(self, steps):
        if not self.tracking:
            return None
        return {"metric": self.metric, "target": self.target, "reached": self.reached,
                "seconds": self.seconds, "step": self.step, "score": self.score,
                "evaluations": self.evaluations, "steps": int(steps)}


def memory_record(device, torch):
    m = {"peak_rss_bytes": None, "rss_method": "unreadable (no getrusage)"}
    try:
        kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        m["peak_rss_bytes"] = int(kb) * 1024
        m["rss_method"] = ("ru_maxrss of the twin's process (a fresh process per run: this "
                           "run's peak, torch's import included)")
    except (OSError, ValueError):
        pass
    if device == "cuda":
        m["torch_max_allocated_bytes"] = int(torch.cuda.max_memory_allocated())
        m["torch_max_reserved_bytes"] = int(torch.cuda.max_memory_reserved())
    return m


class _Nvml:
    """nvmlDeviceGetTotalEnergyConsumption (millijoules) of the device torch uses."""

    def __init__(self, torch):
        self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        if self.lib.nvmlInit_v2() != 0:
            raise OSError("nvmlInit failed")
        self.dev = ctypes.c_void_p()
        found = -1
        try:
            p = torch.cuda.get_device_properties(torch.cuda.current_device())
            bus = f"{p.pci_domain_id:08x}:{p.pci_bus_id:02x}:{p.pci_device_id:02x}.0".encode()
            found = self.lib.nvmlDeviceGetHandleByPciBusId_v2(bus, ctypes.byref(self.dev))
        except (AttributeError, RuntimeError):
            pass
        if found != 0:
            found = self.lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(self.dev))
        if found != 0:
            raise OSError("NVML sees no device")
        if self.read() is None:
            raise OSError("this GPU has no total-energy counter (NVML: not supported; Volta "
                          "or later has one)")

    def read(self):
        mj = ctypes.c_ulonglong(0)
        if self.lib.nvmlDeviceGetTotalEnergyConsumption(self.dev, ctypes.byref(mj)) != 0:
            return None
        return mj.value / 1000.0


class _Rapl:
    """The package zones' energy_uj, summed, wraparound at max_energy_range_uj."""

    def __init__(self, root="/sys/class/powercap"):
        if not os.path.isdir(root):
            raise OSError(f"no RAPL: {root} does not exist (no powercap driver: a VM or "
                          "container, or not an x86 CPU)")
        zones = sorted(z for z in glob.glob(os.path.join(root, "intel-rapl:*"))
                       if os.path.basename(z).count(":") == 1)
        if not zones:
            raise OSError(f"no RAPL: {root} has no intel-rapl:<N> package zone")
        self.zones = []
        for z in zones:
            path = os.path.join(z, "energy_uj")
            try:
                with open(path) as f:
                    last = int(f.read())
            except OSError as e:
                raise OSError(f"RAPL is not readable: {path}: {e.strerror} (energy_uj is "
                              "readable by root only since Linux 5.10, CVE-2020-8694)")
            try:
                with open(os.path.join(z, "max_energy_range_uj")) as f:
                    rng = int(f.read())
            except (OSError, ValueError):
                rng = 0
            self.zones.append([path, rng, last, 0.0])
        self.scope = ("CPU package zones " + ", ".join(os.path.basename(z) for z in zones)
                      + " (every process on them, not only this run)")

    def read(self):
        total = 0.0
        for zone in self.zones:
            path, rng, last, acc = zone
            try:
                with open(path) as f:
                    now = int(f.read())
            except (OSError, ValueError):
                return None
            delta = now - last if now >= last else (rng - last + now if rng > last else now)
            zone[2], zone[3] = now, acc + delta * 1e-6
            total += zone[3]
        return total


# harness/env/energy_meter.h's kMinEnergyWindowSeconds: a shorter window is not measured
# (NVML's counter moves in steps of tens of milliseconds).
MIN_ENERGY_WINDOW_SECONDS = 1.0


class EnergyWindow:
    """Joules over the timed steps, evaluations left out (pause/resume around them)."""

    def __init__(self, device, torch):
        self.meter, self.why, self.source, self.scope = None, None, None, None
        try:
            if device == "cuda":
                self.meter, self.source = _Nvml(torch), "nvml"
                self.scope = "the GPU board (NVML total energy)"
            else:
                self.meter, self.source = _Rapl(), "rapl"
                self.scope = self.meter.scope
        except OSError as e:
            self.why = str(e) if "NVML" in str(e) or "RAPL" in str(e) else (
                f"no NVML ({e})" if device == "cuda" else str(e))
        self.begin = self.excluded = self.paused_at = None
        self.clock_begin, self.clock_excluded, self.clock_paused = None, 0.0, None
        self.failed = False
        self.joules = None

    def _read(self):
        if self.meter is None or self.failed:
            return None
        v = self.meter.read()
        if v is None:
            self.failed = True
            self.why = f"{self.source} stopped reading its counter"
        return v

    def start(self):
        self.begin, self.excluded = self._read(), 0.0
        self.clock_begin, self.clock_excluded = time.monotonic(), 0.0

    def pause(self):
        if self.begin is not None and self.paused_at is None:
            self.paused_at = self._read()
            self.clock_paused = time.monotonic()

    def resume(self):
        if self.paused_at is not None:
            now = self._read()
            if now is not None:
                self.excluded += now - self.paused_at
            self.clock_excluded += time.monotonic() - self.clock_paused
            self.paused_at = None

    def stop(self):
        if self.begin is None:
            return
        self.resume()
        end = self._read()
        if end is not None and not self.failed:
            seconds = time.monotonic() - self.clock_begin - self.clock_excluded
            joules = end - self.begin - self.excluded
            if seconds < MIN_ENERGY_WINDOW_SECONDS or joules <= 0:
                self.why = (f"the timed steps took {seconds:.3f} s, under the "
                            f"{MIN_ENERGY_WINDOW_SECONDS:.1f} s the {self.source} counter needs "
                            f"to resolve them (it read {joules:.3g} J)")
            else:
                self.joules = joules
        self.begin = None

    def record(self, steps, units_per_step, unit):
        if self.meter is None or self.joules is None:
            return {"available": False,
                    "why": self.why or "no timed steps to measure"}
        j = self.joules
        per_step = j / steps if steps > 0 else None
        return {"available": True, "source": self.source, "scope": self.scope,
                "joules": j, "steps": int(steps), "joules_per_step": per_step,
                "joules_per_unit": (per_step / units_per_step
                                    if per_step is not None and units_per_step > 0 else None),
                "unit": unit}
