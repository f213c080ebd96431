// The staging pipeline of every CUDA host path (similarity's results, the inverse Gaussian's
// chunks, large uploads): two slots (a pinned buffer, a device buffer, a stream or an event
// each) used in turn, so that the device works on one step while the host hands on the other.
// Host code only: the CPU tests drive it with the device faked on the host.
#pragma once

#include <cstddef>

namespace hpcml::detail {

// Steps 0 .. steps - 1, step k in slot k % 2: issue(k, slot) queues step k's device work (it
// returns at once), retire(k, slot) waits for it and hands its result on, on the calling thread.
// Step k is retired after step k + 1 is issued (the device has work while the host hands on) and
// before step k + 2 is issued into its slot (a slot is never overwritten before it is emptied);
// every step is retired, in order. After a throw, the caller's buffers must outlive what is in
// flight (the callers drain their streams in a destructor).
template <class Issue, class Retire>
void two_slot_pipeline(std::size_t steps, Issue&& issue, Retire&& retire) {
    for (std::size_t k = 0; k < steps; ++k) {
        issue(k, static_cast<int>(k % 2));
        if (k > 0) retire(k - 1, static_cast<int>((k - 1) % 2));
    }
    if (steps > 0) retire(steps - 1, static_cast<int>((steps - 1) % 2));
}

}  // namespace hpcml::detail
