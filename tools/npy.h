// NumPy .npy files (format versions 1-3), the CLI's tensor format. Little-endian only;
// Fortran-ordered arrays are read as strided views (no copy), since every convgrad API takes
// strides. bfloat16 travels as uint16 ('<u2') holding the raw bits.
#pragma once

#include <string>
#include <vector>

#include "convgrad/convgrad.h"

namespace convgrad::npy {

struct Array {
    std::string descr;            // e.g. "<f4"
    Shape shape;
    bool fortran_order = false;
    std::vector<unsigned char> bytes;

    Tensor tensor(DType dtype);   // a view of `bytes`
};

// The dtype a descr denotes: "<f4" float32, "<f8" float64, "<f2" float16, "<i4" int32;
// "<u2" is bfloat16 only when `uint16_is_bfloat16`. False if none.
bool dtype_of(const std::string &descr, bool uint16_is_bfloat16, DType *out);
std::string descr_of(DType dtype);

// `arg` names the argument in errors ("--filter: cannot open 'f.npy'").
Result<Array> read(const std::string &path, const std::string &arg);
Status write(const std::string &path, DType dtype, const Shape &shape, const void *data);

}  // namespace convgrad::npy
