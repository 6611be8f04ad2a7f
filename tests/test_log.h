// Test helpers shared by the library's API tests: a log callback that keeps
// what the library says, and whether the CUDA backend can be had here.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "j2kc.h"

namespace j2kc_test {

/** Keeps the library's warnings and errors (J2KC_TEST_VERBOSE=1 also prints every line). */
struct Log {
    std::vector<std::string> warnings, errors;
    static void callback(void *opaque, int level, const char *message)
    {
        Log *log = static_cast<Log *>(opaque);
        if (level <= J2KC_LOG_ERROR)
            log->errors.push_back(message);
        else if (level <= J2KC_LOG_WARNING)
            log->warnings.push_back(message);
        if (std::getenv("J2KC_TEST_VERBOSE")) std::fprintf(stderr, "j2kc %d: %s\n", level, message);
    }
    bool warned(const std::string &text) const
    {
        for (const std::string &w : warnings)
            if (w.find(text) != std::string::npos) return true;
        return false;
    }
};

/** Whether a CUDA decoder can be created: the Gpu tests skip without one. */
inline bool have_gpu()
{
    j2kc_decoder_config cfg;
    j2kc_decoder_config_default(&cfg);
    cfg.backend = J2KC_BACKEND_CUDA;
    Log log;
    cfg.log = Log::callback;
    cfg.log_opaque = &log;
    j2kc_decoder *dec = nullptr;
    const int status = j2kc_decoder_create(&dec, &cfg);
    j2kc_decoder_free(&dec);
    return status == J2KC_OK;
}

}  // namespace j2kc_test
