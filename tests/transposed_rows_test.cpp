// The TransposedRows lowering pass (generators/transposed_rows.h) on a plain transposing copy,
// JIT-compiled for this machine: out(j, p) = in(p, j), `lanes` planes into vectors of one
// position each, for 4, 8 and 16 lanes (SSE, AVX2 and AVX-512 widths: LLVM splits the
// wider ones into this machine's registers, so each width's shuffles are checked here,
// AVX-512's included, which no CI machine runs natively) and rows of 1 to 19 positions:
// whole chunks of 8, last chunks of 4-7 (two overlapping runs of 4), shorter masked ones.
// The planes lie a run-time stride apart, wider than a row, and the output is poisoned.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "Halide.h"
#include "transposed_rows.h"

namespace convgrad::test {
namespace {

using namespace Halide;

// The copy's lowered statement, with the pass, as text.
std::string lowered(Pipeline &p, const std::vector<Argument> &args) {
    const std::string file = ::testing::TempDir() + "transposed_rows_test.stmt";
    p.compile_to_lowered_stmt(file, args, StmtOutputFormat::Text, get_jit_target_from_environment());
    std::ifstream in(file);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Every row length from 1 to 19 through one compiled copy of `lanes` planes.
void expect_transposed(int lanes) {
    SCOPED_TRACE("lanes " + std::to_string(lanes));
    ImageParam in(Float(32), 2, "in");
    Var j("j"), p("p");
    Func out("out");
    out(j, p) = in(p, j);
    // The copy as the ncg schedules stage it: a vector of planes per position, positions in
    // a serial loop (the loop the pass rewrites).
    out.bound(j, 0, lanes).vectorize(j);
    Pipeline pipeline(out);
    pipeline.add_custom_lowering_pass(new gen::TransposedRows);
    // The pass took the loop: chunks of 8 positions, by 128-bit lanes where whole or of 4 to
    // 7 positions (the row length is a run-time value: every branch is there).
    const std::string stmt = lowered(pipeline, {in});
    EXPECT_NE(stmt.find(".chunk"), std::string::npos) << stmt;
    EXPECT_NE(stmt.find(".t0.r0"), std::string::npos) << stmt;
    EXPECT_NE(stmt.find(".t4.r0"), std::string::npos) << stmt;
    for (int positions = 1; positions <= 19; positions++) {
        SCOPED_TRACE("positions " + std::to_string(positions));
        const int stride = positions + 5;  // planes apart by more than a row
        Buffer<float> planes(stride, lanes);
        for (int y = 0; y < lanes; y++) {
            for (int x = 0; x < stride; x++) planes(x, y) = float(1000 * y + x) + 0.25f;
        }
        Buffer<float> rows = planes;  // (a view: crop narrows it, not `planes`)
        rows.crop(0, 0, positions);
        in.set(rows);
        Buffer<float> result(lanes, positions);
        result.fill(-12345.f);  // poisoned
        pipeline.realize(result);
        for (int x = 0; x < positions; x++) {
            for (int y = 0; y < lanes; y++) {
                ASSERT_EQ(result(y, x), planes(x, y)) << "plane " << y << ", position " << x;
            }
        }
    }
}

TEST(TransposedRows, TransposesEveryChunkShapeAtEveryVectorWidth) {
    for (int lanes : {4, 8, 16}) expect_transposed(lanes);
}

}  // namespace
}  // namespace convgrad::test
