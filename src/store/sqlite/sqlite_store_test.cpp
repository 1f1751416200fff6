#include <gtest/gtest.h>
TEST(SqliteStoreBuild, Links) {}
