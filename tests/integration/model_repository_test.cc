// Contract tests of ModelRepository against a real PostgreSQL ($VANGUARD_TEST_PG).
#include "orchestrator/model_repository.h"

#include <string>

#include "database_test_base.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace vanguard {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::testing::HasSubstr;

class ModelRepositoryTest : public DatabaseTest {};

TEST_F(ModelRepositoryTest, RegisterThenGetReturnsTheSameModelWithCreateTime) {
  v1::Model model = ValidModel("bert", "v7");
  absl::StatusOr<RegisteredModel> registered = models_->Register(model);
  ASSERT_TRUE(registered.ok()) << registered.status();
  EXPECT_GT(registered->id, 0);
  EXPECT_GT(registered->model.create_time().seconds(), 1'600'000'000);

  absl::StatusOr<RegisteredModel> got = models_->Get("bert", "v7");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->id, registered->id);
  v1::Model without_time = got->model;
  without_time.clear_create_time();
  EXPECT_EQ(got->model.team(), "default");  // from model_owners: no team was given
  without_time.clear_team();
  EXPECT_TRUE(MessageDifferencer::Equals(without_time, model)) << got->model.DebugString();
  EXPECT_EQ(got->model.create_time().seconds(), registered->model.create_time().seconds());

  // The queryable columns match the stored proto.
  pqxx::result row = Sql("SELECT name, version, protocol, spec->>'name' AS json_name FROM models");
  ASSERT_EQ(row.size(), 1u);
  EXPECT_STREQ(row[0]["name"].c_str(), "bert");
  EXPECT_STREQ(row[0]["version"].c_str(), "v7");
  EXPECT_STREQ(row[0]["protocol"].c_str(), "PROTOCOL_KSERVE_V2_REST");
  EXPECT_STREQ(row[0]["json_name"].c_str(), "bert");
}

TEST_F(ModelRepositoryTest, DuplicateNameAndVersionIsAlreadyExists) {
  ASSERT_TRUE(models_->Register(ValidModel("bert", "v1")).ok());
  absl::StatusOr<RegisteredModel> again = models_->Register(ValidModel("bert", "v1"));
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists) << again.status();
  EXPECT_THAT(again.status().message(), HasSubstr("bert version v1"));
  // Another version of the same model, or the same version of another model, is fine.
  EXPECT_TRUE(models_->Register(ValidModel("bert", "v2")).ok());
  EXPECT_TRUE(models_->Register(ValidModel("gpt", "v1")).ok());
}

TEST_F(ModelRepositoryTest, ANameKeepsTheTeamOfItsFirstRegistration) {
  absl::StatusOr<RegisteredModel> first = models_->Register(ValidModel("bert", "v1"), "vision");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->model.team(), "vision");
  absl::StatusOr<RegisteredModel> second = models_->Register(ValidModel("bert", "v2"), "speech");
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->model.team(), "vision") << "a later registration does not move the name";
  // The owner check sees the owning team and its refusal stores nothing.
  std::string seen;
  absl::StatusOr<RegisteredModel> refused =
      models_->Register(ValidModel("bert", "v3"), "speech", [&](const std::string& owner) {
        seen = owner;
        return absl::PermissionDeniedError("no");
      });
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(seen, "vision");
  EXPECT_EQ(models_->Get("bert", "v3").status().code(), absl::StatusCode::kNotFound);
  absl::StatusOr<RegisteredModel> latest = models_->Get("bert", "");
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(latest->model.team(), "vision");
}

TEST_F(ModelRepositoryTest, EmptyVersionGetsTheLatestRegistered) {
  ASSERT_TRUE(models_->Register(ValidModel("bert", "v2")).ok());
  ASSERT_TRUE(models_->Register(ValidModel("bert", "v10")).ok());  // registered last
  ASSERT_TRUE(models_->Register(ValidModel("other", "v99")).ok());
  absl::StatusOr<RegisteredModel> latest = models_->Get("bert", "");
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(latest->model.version(), "v10");
  absl::StatusOr<RegisteredModel> v2 = models_->Get("bert", "v2");
  ASSERT_TRUE(v2.ok());
  EXPECT_EQ(v2->model.version(), "v2");
}

TEST_F(ModelRepositoryTest, GetUnknownIsNotFound) {
  ASSERT_TRUE(models_->Register(ValidModel("bert", "v1")).ok());
  EXPECT_EQ(models_->Get("bert", "v9").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(models_->Get("nope", "").status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(models_->Get("nope", "").status().message(), HasSubstr("nope"));
}

TEST_F(ModelRepositoryTest, ListFiltersByNameAndHonoursLimit) {
  ASSERT_TRUE(models_->Register(ValidModel("bert", "v1")).ok());
  ASSERT_TRUE(models_->Register(ValidModel("bert", "v2")).ok());
  ASSERT_TRUE(models_->Register(ValidModel("alpha", "v1")).ok());

  absl::StatusOr<std::vector<v1::Model>> all = models_->List("", 100);
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].name(), "alpha");  // by name, then newest version first
  EXPECT_EQ((*all)[1].version(), "v2");
  EXPECT_EQ((*all)[2].version(), "v1");

  absl::StatusOr<std::vector<v1::Model>> bert = models_->List("bert", 100);
  ASSERT_TRUE(bert.ok());
  EXPECT_EQ(bert->size(), 2u);
  absl::StatusOr<std::vector<v1::Model>> one = models_->List("", 1);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->size(), 1u);
}

}  // namespace
}  // namespace vanguard
