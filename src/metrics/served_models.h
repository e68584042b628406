#pragma once
// The models an engine serves, as its OpenAI-compatible GET /v1/models lists them (vLLM:
// every --served-model-name and LoRA adapter; SGLang: its served model name). They are the
// model label values that always keep their own series (metrics/label_bound.h).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/url.h"

namespace infertel::metrics {

// The `id` of every entry of `{"object":"list","data":[{"id":...},...]}`; nullopt when the
// body is not such a list.
std::optional<std::vector<std::string>> ParseModelList(std::string_view body);

// GET <base>/v1/models (body up to 1 MiB, 2 s timeouts). Blocking: call from a probe thread,
// never from a gateway worker.
std::optional<std::vector<std::string>> FetchServedModels(const http::Url& base,
                                                          std::string* error);

}  // namespace infertel::metrics
