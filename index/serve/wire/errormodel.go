package wire

import "github.com/apache/iceberg-go/catalog/rest"

// ErrorModel is the REST spec's error response body (IcebergErrorResponse:
// an "error" object with message, type and code), which Java's
// ErrorResponseParser and iceberg-go's client read to pick an exception.
type ErrorModel struct {
	Error rest.PlanningError `json:"error"`
}

// NewError is the error body of an HTTP status code, an exception type the
// spec names (NoSuchTableException, BadRequestException, …) and a message.
func NewError(code int, typ, message string) ErrorModel {
	return ErrorModel{Error: rest.PlanningError{Message: message, Type: typ, Code: code}}
}
