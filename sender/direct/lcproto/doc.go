// Package lcproto holds the protobuf messages of the original service's own-channel protocol
// that push needs (GenericCommand and the login, data, ack and error commands), generated
// from messages.proto by `make proto`. The generated code is committed: building and testing
// need no protoc. Messages are not safe for concurrent mutation; sender/direct builds one per
// frame.
package lcproto
