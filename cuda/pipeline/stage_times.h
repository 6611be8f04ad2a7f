/**
 * @file stage_times.h
 * @brief Stage times (j2kc_stage_times) of codecs made of other codecs,
 * added up.
 */
#pragma once

#include "j2kc.h"

namespace j2kc {

/** Adds every stage of `t` to `sum`. */
inline void add_stage_times(j2kc_stage_times &sum, const j2kc_stage_times &t)
{
    sum.upload += t.upload;
    sum.color += t.color;
    sum.dwt += t.dwt;
    sum.quant += t.quant;
    sum.tier1 += t.tier1;
    sum.rate += t.rate;
    sum.tier2 += t.tier2;
    sum.download += t.download;
    sum.total += t.total;
}

}  // namespace j2kc
