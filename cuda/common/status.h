/**
 * @file status.h
 * @brief Errors inside the core: an exception type carrying a j2kc_status,
 * thrown by checks and caught at the C API boundary (api/), never beyond it.
 */
#pragma once

#include <cstdarg>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "j2kc.h"

namespace j2kc {

class Error : public std::runtime_error {
public:
    Error(j2kc_status status, const std::string &message) : std::runtime_error(message), status_(status) {}
    j2kc_status status() const { return status_; }

private:
    j2kc_status status_;
};

// [[noreturn]] comes first: clang accepts no attribute list after __attribute__.
[[noreturn]]
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
inline void
fail(j2kc_status status, const char *format, ...)
{
    char message[512];
    va_list args;
    va_start(args, format);
    std::vsnprintf(message, sizeof(message), format, args);
    va_end(args);
    throw Error(status, message);
}

}  // namespace j2kc

/** Fails with INVALID_DATA: the codestream broke a rule of the standard. */
#define J2KC_CHECK_DATA(cond, ...)                                     \
    do {                                                               \
        if (!(cond)) ::j2kc::fail(J2KC_ERR_INVALID_DATA, __VA_ARGS__); \
    } while (0)
/** Fails with INVALID_ARG: the caller asked for something impossible. */
#define J2KC_CHECK_ARG(cond, ...)                                     \
    do {                                                              \
        if (!(cond)) ::j2kc::fail(J2KC_ERR_INVALID_ARG, __VA_ARGS__); \
    } while (0)
/** Fails with UNSUPPORTED: legal, but not handled by this build. */
#define J2KC_CHECK_SUPPORTED(cond, ...)                               \
    do {                                                              \
        if (!(cond)) ::j2kc::fail(J2KC_ERR_UNSUPPORTED, __VA_ARGS__); \
    } while (0)
/** Fails with LIMIT: a configured resource limit would be exceeded. */
#define J2KC_CHECK_LIMIT(cond, ...)                             \
    do {                                                        \
        if (!(cond)) ::j2kc::fail(J2KC_ERR_LIMIT, __VA_ARGS__); \
    } while (0)
