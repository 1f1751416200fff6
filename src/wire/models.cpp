#include "wire/models.h"

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

namespace cairva::wire {

namespace bj = boost::json;

std::string openai_model_list(std::span<const std::string> models, int64_t created_s,
                              std::string_view owned_by) {
  bj::array data;
  for (const std::string& id : models) {
    data.push_back(bj::object{
        {"id", id}, {"object", "model"}, {"created", created_s}, {"owned_by", owned_by}});
  }
  return bj::serialize(bj::object{{"object", "list"}, {"data", std::move(data)}});
}

std::string anthropic_model_list(std::span<const std::string> models, std::string_view created_at) {
  bj::array data;
  for (const std::string& id : models) {
    data.push_back(bj::object{
        {"type", "model"}, {"id", id}, {"display_name", id}, {"created_at", created_at}});
  }
  bj::object list{{"data", std::move(data)}, {"has_more", false}};
  list["first_id"] = models.empty() ? bj::value(nullptr) : bj::value(models.front());
  list["last_id"] = models.empty() ? bj::value(nullptr) : bj::value(models.back());
  return bj::serialize(list);
}

}  // namespace cairva::wire
