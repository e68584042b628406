# The official OTLP .proto files come from the npm package
# @opentelemetry/otlp-grpc-exporter-base@0.38.0 (pinned with its integrity hash in
# package-lock.json); they are compiled here, never copied into the repository.
set(OTLP_PROTO_ROOT "${CMAKE_SOURCE_DIR}/node_modules/@opentelemetry/otlp-grpc-exporter-base/build/protos"
    CACHE PATH "Root of the official OTLP proto files")
if(NOT EXISTS "${OTLP_PROTO_ROOT}/opentelemetry/proto/trace/v1/trace.proto")
  message(FATAL_ERROR "OTLP protos not found under ${OTLP_PROTO_ROOT}: run scripts/install-deps.sh")
endif()

set(OTLP_MESSAGE_PROTOS
  opentelemetry/proto/common/v1/common.proto
  opentelemetry/proto/resource/v1/resource.proto
  opentelemetry/proto/trace/v1/trace.proto
  opentelemetry/proto/metrics/v1/metrics.proto
  opentelemetry/proto/logs/v1/logs.proto)
set(OTLP_SERVICE_PROTOS
  opentelemetry/proto/collector/trace/v1/trace_service.proto
  opentelemetry/proto/collector/metrics/v1/metrics_service.proto
  opentelemetry/proto/collector/logs/v1/logs_service.proto)

set(OTLP_GEN_DIR "${CMAKE_BINARY_DIR}/gen")
file(MAKE_DIRECTORY "${OTLP_GEN_DIR}")
set(OTLP_GEN_SRCS)
foreach(p IN LISTS OTLP_MESSAGE_PROTOS OTLP_SERVICE_PROTOS)
  string(REGEX REPLACE "\\.proto$" "" base "${p}")
  set(outs "${OTLP_GEN_DIR}/${base}.pb.cc" "${OTLP_GEN_DIR}/${base}.pb.h")
  set(args --cpp_out=${OTLP_GEN_DIR})
  if(p IN_LIST OTLP_SERVICE_PROTOS)
    list(APPEND outs "${OTLP_GEN_DIR}/${base}.grpc.pb.cc" "${OTLP_GEN_DIR}/${base}.grpc.pb.h")
    list(APPEND args --grpc_out=${OTLP_GEN_DIR} --plugin=protoc-gen-grpc=${GRPC_CPP_PLUGIN})
  endif()
  add_custom_command(
    OUTPUT ${outs}
    COMMAND protobuf::protoc -I ${OTLP_PROTO_ROOT} ${args} ${OTLP_PROTO_ROOT}/${p}
    DEPENDS ${OTLP_PROTO_ROOT}/${p}
    COMMENT "protoc ${p}")
  list(APPEND OTLP_GEN_SRCS ${outs})
endforeach()

add_library(infertel_otlp_proto STATIC ${OTLP_GEN_SRCS})
target_include_directories(infertel_otlp_proto SYSTEM PUBLIC "${OTLP_GEN_DIR}")
target_link_libraries(infertel_otlp_proto PUBLIC protobuf::libprotobuf PkgConfig::GRPCPP)
target_compile_options(infertel_otlp_proto PRIVATE -w)
