"""hpcml.telemetry: GPU power, energy and utilisation through NVML (loaded at run time), and CPU
energy through Linux's powercap interface (RAPL: package and DRAM).

    with hpcml.telemetry.trace(device=0, interval_ms=100) as t:
        run_the_work()
    t.summary   # duration_s, energy_j, mean_power_w, peak_power_w, mean utilisation, ...,
                # cpu_energy_j (None where not measured) and cpu_energy (its source, or why not)
    t.samples   # dict of NumPy arrays: time_s, temperature_c, power_w, power_percent, ...

    with hpcml.telemetry.cpu_energy() as e:     # any machine
        run_the_work()
    e.energy_j, e.seconds, e.source             # energy_j None (and source the reason) where not measured

Without a GPU or NVML, trace() records the duration and CPU energy and says why the GPU's fields
are None (summary["gpu_telemetry"]); trace(strict=True) raises RuntimeError there instead; status()
says which without tracing.
plot(csv, png) draws the seed's figure from a trace in the seed's format (hpcml-trace's default).
"""

from __future__ import annotations

import csv
import datetime
import os
import time
from typing import Any, Optional, Union

import numpy as np

from . import _arrays, _hpcml, _optional

__all__ = ["status", "trace", "plot", "cpu_energy_status", "cpu_energy", "carbon_intensity", "write_emissions",
           "WORLD_AVERAGE_CARBON_INTENSITY"]

WORLD_AVERAGE_CARBON_INTENSITY = 475.0  # gCO2e/kWh: CodeCarbon's world average (IEA, 2019)


def status(device: int = 0) -> dict[str, Any]:
    """{"status": "ok" | "not_compiled" | "no_library" | "no_device" | "error", "message", "device_name"}"""
    return _hpcml._telemetry_status(int(device))


def cpu_energy_status() -> dict[str, Any]:
    """{"available", "message" (the domains, or why not), "domains"}: CPU energy from powercap's
    package and DRAM counters (/sys/class/powercap, or HPCML_POWERCAP_ROOT)."""
    return _hpcml._cpu_energy_status()


class cpu_energy:
    """The CPU package and DRAM energy while the with-block runs (the whole machine's CPUs, not
    this process alone): energy_j, or None where it is not measured, with the reason in source
    (no powercap interface, unreadable counters, a window shorter than 10 ms)."""

    def __init__(self) -> None:
        self.energy_j: Optional[float] = None
        self.seconds = 0.0
        self.source = ""

    def __enter__(self) -> cpu_energy:
        self._meter = _hpcml._CpuEnergyMeter()
        return self

    def __exit__(self, *exc: object) -> None:
        r = self._meter.read()
        self.seconds = r["seconds"]
        self.energy_j = r["energy_j"] if r["valid"] else None
        self.source = self._meter.status()["message"] if r["valid"] else r["why"]

    def fields(self) -> dict[str, Any]:
        """{"cpu_energy_j", "cpu_energy"}: for a summary or a call's stats."""
        return {"cpu_energy_j": self.energy_j, "cpu_energy": self.source}


def carbon_intensity(value: Optional[float] = None) -> dict[str, Any]:
    """{"grams_per_kwh", "world_average", "label"}: `value` (gCO2e/kWh) when given, else the
    environment's HPCML_CARBON_INTENSITY, else the world average, labelled as such; a value that
    is not a finite number >= 0 (given or in the environment) raises ValueError naming it."""
    return _hpcml._carbon_intensity(None if value is None else float(value))


def write_emissions(path: Union[str, os.PathLike[str]], duration_s: float, *, cpu_energy_j: Optional[float] = None,
                    gpu_energy_j: Optional[float] = None, carbon_intensity: Optional[float] = None,
                    project_name: str = "hpcml", gpu_model: str = "", gpu_count: int = 0) -> dict[str, Any]:
    """Appends a run to `path`, a CodeCarbon emissions.csv (its 3.3 columns and units; the header
    when the file is new): energy (None where not measured) times the carbon intensity (as
    carbon_intensity(); country_name says which). Returns the intensity used and emissions_kg.
    Raises OSError (with the system's reason) where the file cannot be opened for appending,
    ValueError where no energy was measured (both None: a row would claim 0 kWh), where an
    existing file has another header, or for a carbon intensity as carbon_intensity() refuses."""
    if cpu_energy_j is None and gpu_energy_j is None:
        raise ValueError("no energy was measured (cpu_energy_j and gpu_energy_j are None): no row written to "
                         f"{os.fspath(path)!r}")
    _hpcml._carbon_intensity(None if carbon_intensity is None else float(carbon_intensity))  # refused before a file is made
    with open(path, "a"):  # the system's reason, naming the path, before anything is written
        pass
    return _hpcml._append_emissions_csv(str(path), float(duration_s),
                                        None if cpu_energy_j is None else float(cpu_energy_j),
                                        None if gpu_energy_j is None else float(gpu_energy_j),
                                        None if carbon_intensity is None else float(carbon_intensity),
                                        project_name, gpu_model, int(gpu_count))


class trace:
    """Samples GPU `device` every `interval_ms` while the with-block runs (the module's docstring
    shows its summary and samples), with the CPU's energy and the duration.

    Where GPU telemetry cannot be had (no GPU, no NVML, a build without it), the trace records
    the duration and the CPU's energy where it can: the GPU's fields are None, samples is empty,
    and summary["gpu_telemetry"] says why (on a GPU it names what was traced). strict=True
    raises there instead, as hpcml-trace --strict refuses.

    Raises:
        ValueError: interval_ms not an integer >= 1, strict not a bool, a device ordinal out of
            range.
        RuntimeError: with strict=True, no GPU telemetry here (status() says why, without raising).
    """

    def __init__(self, device: int = 0, interval_ms: int = 100, *, strict: bool = False) -> None:
        # Checked here: C++ names it "interval", and a build without NVML does not check it at all.
        interval_ms = _arrays.integer(interval_ms, "interval_ms", minimum=1)
        device = _arrays.integer(device, "device", 0, _arrays.INT_MAX)
        strict = _arrays.boolean(strict, "strict")
        why = status(device)
        if why["message"].startswith("device:"):  # a GPU machine without that device: the argument is wrong
            raise ValueError(why["message"])
        self._sampler = None
        self.device_name = ""
        if strict or why["status"] == "ok":
            self._sampler = _hpcml._TelemetrySampler(device, datetime.timedelta(milliseconds=interval_ms))
            self.device_name = self._sampler.device_name()
        self._gpu = why["message"] if self._sampler else f"not measured: {why['message']}"
        self.summary: dict[str, Any] = {}
        self.samples: dict[str, Any] = {}

    def __enter__(self) -> trace:
        self._cpu = cpu_energy().__enter__()
        self._start = time.perf_counter()
        if self._sampler:
            self._sampler.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._sampler:
            self.summary = self._sampler.stop()
        else:
            self.summary = dict(duration_s=time.perf_counter() - self._start, energy_j=None, mean_power_w=None,
                                peak_power_w=None, mean_gpu_util_percent=None, mean_memory_util_percent=None,
                                samples=0, energy_from_counter=False, power_instant=False)
        self._cpu.__exit__(*exc)
        self.summary.update(self._cpu.fields(), gpu_telemetry=self._gpu)
        self.samples = {k: np.asarray(v) for k, v in self._sampler.samples().items()} if self._sampler else {}

    def write_emissions(self, path: Union[str, os.PathLike[str]], carbon_intensity: Optional[float] = None,
                        project_name: str = "hpcml") -> dict[str, Any]:
        """This trace's run (GPU and CPU energy) as a row of a CodeCarbon emissions.csv: write_emissions."""
        return write_emissions(path, self.summary["duration_s"], cpu_energy_j=self.summary["cpu_energy_j"],
                               gpu_energy_j=self.summary["energy_j"], carbon_intensity=carbon_intensity,
                               project_name=project_name, gpu_model=self.device_name,
                               gpu_count=1 if self._sampler else 0)


def plot(csv_path: Union[str, os.PathLike[str]], png_path: Union[str, os.PathLike[str]]) -> None:
    """The seed's figure from a trace in the seed's format: the percentages (and temperature in
    C) on the left axis against time, energy in kJ dashed on the right axis."""
    plt = _optional.pyplot("hpcml.telemetry.plot")

    with open(csv_path, newline="") as f:
        rows = list(csv.reader(f, delimiter=";"))
    header, rows = rows[0], [r for r in rows[1:] if r]
    if header[0] != "Timestamp" or "Energy [kJ]" not in header:
        raise ValueError(f"csv_path: not a trace in the seed's format (header {header!r})")
    t = np.array([float(r[0]) for r in rows])  # Unix seconds
    t -= t[0]
    values = np.array([[float(v) for v in r[1:]] for r in rows])
    fig, left = plt.subplots(figsize=(10, 4.5))
    for column, name in enumerate(header[1:-1]):
        left.plot(t, values[:, column], label=name)
    left.set_xlabel("time [s]")
    left.set_ylabel("% (temperature in C)")
    right = left.twinx()
    right.plot(t, values[:, -1], "k--", label=header[-1])
    right.set_ylabel(header[-1])
    lines = left.get_legend_handles_labels()
    extra = right.get_legend_handles_labels()
    left.legend(lines[0] + extra[0], lines[1] + extra[1], fontsize=8, loc="upper left")
    left.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(png_path, dpi=120)
    plt.close(fig)
