// gRPC status codes (https://grpc.github.io/grpc/core/md_doc_statuscodes.html), for
// plugins that judge gRPC answers and the core's own gRPC refusals alike.

export const GRPC_OK = 0;
export const GRPC_CANCELLED = 1;
export const GRPC_UNKNOWN = 2;
export const GRPC_INVALID_ARGUMENT = 3;
export const GRPC_DEADLINE_EXCEEDED = 4;
export const GRPC_NOT_FOUND = 5;
export const GRPC_PERMISSION_DENIED = 7;
export const GRPC_RESOURCE_EXHAUSTED = 8;
export const GRPC_FAILED_PRECONDITION = 9;
export const GRPC_UNIMPLEMENTED = 12;
export const GRPC_INTERNAL = 13;
export const GRPC_UNAVAILABLE = 14;
export const GRPC_UNAUTHENTICATED = 16;
