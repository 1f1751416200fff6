#include "store/validate.h"

#include <gtest/gtest.h>

namespace cairva::store {

TEST(RedactedStoreUrl, HidesPasswordsAndKeepsTheRest) {
  EXPECT_EQ(redacted_store_url("postgresql://cairva:s3cret@db.internal:5432/cairva"),
            "postgresql://cairva:***@db.internal:5432/cairva");
  EXPECT_EQ(redacted_store_url("postgresql://cairva@db/cairva?sslmode=require&password=s3cret"),
            "postgresql://cairva@db/cairva?sslmode=require&password=***");
  EXPECT_EQ(redacted_store_url("postgresql://db/cairva?password=a&x=1"),
            "postgresql://db/cairva?password=***&x=1");
  EXPECT_EQ(redacted_store_url("sqlite:///var/lib/cairva/cairva.db"),
            "sqlite:///var/lib/cairva/cairva.db");
  EXPECT_EQ(redacted_store_url("postgresql://user@host/db"), "postgresql://user@host/db");
}

TEST(ValidateNewAgreement, NamesTheFirstBadField) {
  NewAgreement a{"s", "b", "p", {}, {}};
  a.terms.window = {0, 10};
  a.terms.limits = {1, 1, 1};
  a.terms.allowance = {1, 1};
  EXPECT_TRUE(validate_new_agreement(a, {"p"}).ok());
  EXPECT_NE(validate_new_agreement(a, {"q"}).error().message.find("provider"), std::string::npos);
  a.terms.window = {10, 10};
  EXPECT_NE(validate_new_agreement(a, {"p"}).error().message.find("ends_at"), std::string::npos);
}

}  // namespace cairva::store
