// The registry's rules for one CPU vendor while in scope (kernel_registry.h: the plain-x
// rules differ on Intel cores), so that each rule is tested on any host.
#pragma once

#include "kernel_registry.h"

namespace convgrad::test {

struct ScopedRegistryCpu {
    explicit ScopedRegistryCpu(RegistryCpu cpu) { set_registry_cpu(cpu); }
    ~ScopedRegistryCpu() { set_registry_cpu(RegistryCpu::kHost); }
    ScopedRegistryCpu(const ScopedRegistryCpu &) = delete;
    ScopedRegistryCpu &operator=(const ScopedRegistryCpu &) = delete;
};

}  // namespace convgrad::test
