// The machine's measured floating-point peak: FMA throughput of independent accumulator
// chains on every thread, with the widest vector ISA the CPU has (float32 or float64).
#pragma once

namespace convgrad::bench {

struct Peak {
    double gflops = 0;
    const char *isa = "";
};

Peak measure_fma_peak(int threads, bool float64);

}  // namespace convgrad::bench
