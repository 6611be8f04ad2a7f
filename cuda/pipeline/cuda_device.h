/**
 * @file cuda_device.h
 * @brief Whether a CUDA device can be used, asked without failing: the built
 * ffmpeg must start, and the CPU backend work, on machines with no driver.
 */
#pragma once

namespace j2kc {

/** True when device `ordinal` exists and a context can be made on it. */
bool cuda_device_usable(int ordinal);

/** Throws NO_DEVICE with the runtime's reason when the device is not usable. */
void require_cuda_device(int ordinal);

}  // namespace j2kc
