// Whether this build runs under AddressSanitizer or ThreadSanitizer, for the tests whose
// wall-clock bounds must hold there too (5-15 times slower).
#pragma once

namespace torqued::test_support {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitizedBuild = true;
#elif defined(__has_feature)
inline constexpr bool kSanitizedBuild =
    __has_feature(address_sanitizer) || __has_feature(thread_sanitizer);
#else
inline constexpr bool kSanitizedBuild = false;
#endif

}  // namespace torqued::test_support
