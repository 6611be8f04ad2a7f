/**
 * @file log.h
 * @brief The core's only way to speak: a printf-style call that forwards to
 * the caller's j2kc_log_fn (FFmpeg's av_log in the wrapper), or says nothing.
 */
#pragma once

#include <cstdarg>
#include <cstdio>

#include "j2kc.h"

namespace j2kc {

struct Logger {
    j2kc_log_fn fn = nullptr;
    void *opaque = nullptr;

#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    void
    log(int level, const char *format, ...) const
    {
        if (!fn) return;
        char message[1024];
        va_list args;
        va_start(args, format);
        std::vsnprintf(message, sizeof(message), format, args);
        va_end(args);
        fn(opaque, level, message);
    }
};

}  // namespace j2kc
