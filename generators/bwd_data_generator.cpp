// Data gradient (backprop-input, transposed convolution), written once for every rank,
// layout, grouping and dtype:
//
//   dx[c, i, g, n] = sum over (co, k) with i == o*s - pb + k*d of  dy[co, o, g, n] * w[c, co, k, g]
//
// i.e. for each input position i and tap k, the output position o = (i + pb - k*d) / s when
// that division is exact and o is in range; otherwise the term is a structural zero.
#include "bwd_data.h"

namespace convgrad::gen {
namespace {

using namespace canonical;

class BwdData : public ConvGradGenerator<BwdData> {
public:
    void configure() {
        const Type t = storage();
        dy_ = add_input<Buffer<>>("dy", t, kActDims);
        w_ = add_input<Buffer<>>("w", t, kFilterDims);
        dx_ = add_output<Buffer<>>("dx", t, kActDims);
    }

    void generate() {
        auto &dy = *dy_;
        auto &w = *w_;
        auto &dx = *dx_;
        const Type st = storage(), at = accumulator();
        BwdDataStages s;
        const std::array<AxisParams, 3> ax = axes();

        // Reads of dy outside its spatial extent are the structural zeros of the padding.
        Func dy_padded = BoundaryConditions::constant_exterior(
            dy, Halide::cast(st, 0),
            {Range(), {0, dy.dim(kX).extent()}, {0, dy.dim(kY).extent()},
             {0, dy.dim(kZ).extent()}, Range(), Range()});

        // The filter as the kernel reads it: in the accumulator type, so a packed copy (see the
        // schedules) converts 16-bit filters once instead of in the inner loop.
        s.w_local = Func("w_local");
        {
            Var ci, co, kx, ky, kz, g;
            s.w_local(ci, co, kx, ky, kz, g) = Halide::cast(at, w(ci, co, kx, ky, kz, g));
        }

        s.dy_in = Func("dy_in");
        {
            Var co, x, y, z, g, n;
            s.dy_in(co, x, y, z, g, n) = Halide::cast(at, dy_padded(co, x, y, z, g, n));
        }
        // Halide 14 converts 16-bit floats in software on x86 (no F16C): such inputs are
        // converted once per element instead of at every use in the tiles.
        s.staged_inputs = st.bits() == 16;

        s.r = RDom({{0, w.dim(kCo).extent()}, {0, w.dim(kKx).extent()},
                    {0, w.dim(kKy).extent()}, {0, w.dim(kKz).extent()}}, "r");
        const Expr co = s.r[0];
        const Expr k[3] = {s.r[1], s.r[2], s.r[3]};
        const Expr i[3] = {s.x, s.y, s.z};
        Expr o[3], hit = Internal::const_true();
        for (int a = 0; a < 3; a++) {
            // Halide's / and % round towards -inf, so a negative t lands outside [0, O).
            Expr t = i[a] + ax[a].pad_begin - k[a] * ax[a].dilation;
            o[a] = t / ax[a].stride;
            hit = hit && (t % ax[a].stride == 0);
        }

        // Taps whose output position is not on the stride grid are structural zeros: the
        // predicate skips them (and their whole channel loop) instead of multiplying zeros.
        s.r.where(hit);
        s.acc = Func("acc");
        s.acc(s.c, s.x, s.y, s.z, s.g, s.n) = Halide::cast(at, 0);
        s.acc(s.c, s.x, s.y, s.z, s.g, s.n) += s.dy_in(co, o[0], o[1], o[2], s.g, s.n) *
                                                s.w_local(s.c, co, k[0], k[1], k[2], s.g);

        s.dx_local = Func("dx_local");
        s.dx_local(s.c, s.x, s.y, s.z, s.g, s.n) = Halide::cast(st, s.acc(s.c, s.x, s.y, s.z, s.g, s.n));
        dx(s.c, s.x, s.y, s.z, s.g, s.n) = s.dx_local(s.c, s.x, s.y, s.z, s.g, s.n);
        s.dx = dx;

        const Layout lay = variant_layout();
        constrain_activation_strides(dy, lay);
        constrain_activation_strides(dx, lay);
        constrain_filter_strides(w, lay);

        s.unit_stride = unit_stride();
        s.c_extent = dx.dim(kC).extent();
        s.x_extent = dx.dim(kX).extent();
        s.g_extent = dx.dim(kG).extent();
        schedule_bwd_data_cpu(s, get_target(), lay);
    }

private:
    GeneratorInput<Buffer<>> *dy_ = nullptr;
    GeneratorInput<Buffer<>> *w_ = nullptr;
    GeneratorOutput<Buffer<>> *dx_ = nullptr;
};

}  // namespace
}  // namespace convgrad::gen

HALIDE_REGISTER_GENERATOR(convgrad::gen::BwdData, convgrad_bwd_data)
