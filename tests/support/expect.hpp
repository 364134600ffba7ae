// Shared assertions for the test files.
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "formats/error.hpp"

namespace spconv::test {

// f() must throw spconv::error with this category and a message containing `fragment`.
template <class F>
void expect_error(F&& f, errc code, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "expected an error containing '" << fragment << "'";
  } catch (const error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

}  // namespace spconv::test
