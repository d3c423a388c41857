// Package wire is the Iceberg REST wire encoding of scan planning: single
// values (partition values, bounds, literals), content files, scan-task
// envelopes, expressions (residual filters) and error bodies.
//
// The judge of every form here is the strictest client, Java's own parsers
// (SingleValueParser, ContentFileParser, RESTFileScanTaskParser,
// ExpressionParser): what they reject fails a whole plan in Spark and Flink,
// while iceberg-go's client forgives most of it. Where the REST OpenAPI file
// is more precise than Java's writer (six fraction digits for a timestamp,
// say), the encoder writes the spec's form, which Java reads too. Where Java
// and iceberg-go's client disagree, the encoder follows Java and the comment
// at that place says what iceberg-go does.
//
// Each encoder has a decoder that reads what Java reads, so the tests are a
// table of every type's encoding both ways.
package wire
