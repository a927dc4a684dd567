// The third-party and standard headers that nearly every test includes, precompiled once for all
// of them (test/CMakeLists.txt). Ours stay out: a change to a trpc header must not rebuild every
// test.
#pragma once

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <google/protobuf/message.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>
