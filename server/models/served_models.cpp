// ServedModels operations under a reader-writer lock (see served_models.hpp).
#include "server/models/served_models.hpp"

#include <algorithm>
#include <mutex>

namespace torqued::server {

RegisteredModelPtr ServedModels::find(const std::string& id) const {
  std::shared_lock lock(mutex_);
  const auto it = models_.find(id);
  return it == models_.end() ? nullptr : it->second;
}

RegisteredModelPtr ServedModels::insert(RegisteredModelPtr model) {
  std::unique_lock lock(mutex_);
  const std::string id = model->id;
  return models_.try_emplace(id, std::move(model)).first->second;
}

bool ServedModels::erase(const std::string& id) {
  std::unique_lock lock(mutex_);
  return models_.erase(id) > 0;
}

std::vector<RegisteredModelPtr> ServedModels::list() const {
  std::vector<RegisteredModelPtr> out;
  {
    std::shared_lock lock(mutex_);
    out.reserve(models_.size());
    for (const auto& [id, model] : models_) out.push_back(model);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::tie(a->layout.name(), a->id) < std::tie(b->layout.name(), b->id);
  });
  return out;
}

std::size_t ServedModels::size() const {
  std::shared_lock lock(mutex_);
  return models_.size();
}

}  // namespace torqued::server
