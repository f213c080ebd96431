/// @file
/// hpcml: fused numerical kernels for CUDA and the CPU, each beside its naive baseline.
#pragma once

#include <hpcml/core.hpp>
#include <hpcml/device.hpp>
#include <hpcml/device_memory.hpp>
#include <hpcml/invgauss.hpp>
#include <hpcml/regret.hpp>
#include <hpcml/similarity.hpp>
#include <hpcml/telemetry.hpp>
#include <hpcml/version.hpp>
