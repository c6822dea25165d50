// The depthwise filter gradients' tiles over square 3x3 and 5x5 filters (the NXG and NCG
// schedules, cpu_bwd_weights.cpp).
#pragma once

#include "../generators/bwd_weights.h"

namespace convgrad::gen {

// Every tap accumulates in its own register while the positions stream past once, so each
// dy vector feeds 9 (25) independent FMAs: `stage` is specialised per filter size, with the
// taps split out and unrolled between `vector_dim` (innermost) and `positions`, then the
// tap loops' remains and `outer`. Returns the specialisations, for the caller to vectorise
// (and specialise further).
inline std::vector<Stage> taps_in_registers(const BwdWeightsStages &s, Stage stage, const VarOrRVar &vector_dim,
                                            const std::vector<VarOrRVar> &positions,
                                            const std::vector<VarOrRVar> &outer) {
    Var kxo("kxo"), kxi("kxi"), kyo("kyo"), kyi("kyi");
    std::vector<Stage> out;
    for (int taps : {3, 5}) {
        Stage st = stage.specialize(s.square_2d(taps));
        std::vector<VarOrRVar> order = {vector_dim, kxi, kyi};
        order.insert(order.end(), positions.begin(), positions.end());
        for (const VarOrRVar &d : {VarOrRVar(kxo), VarOrRVar(kyo), VarOrRVar(s.kz)}) order.push_back(d);
        order.insert(order.end(), outer.begin(), outer.end());
        st.split(s.kx, kxo, kxi, taps).split(s.ky, kyo, kyi, taps).reorder(order).unroll(kxi).unroll(kyi);
        out.push_back(st);
    }
    return out;
}

}  // namespace convgrad::gen
