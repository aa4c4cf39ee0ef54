extension JSONObject {
    /// Parses bytes that must hold one JSON object (an event, a campaign record, a content object).
    ///
    /// - Parameters:
    ///   - bytes: UTF-8 JSON.
    ///   - path: where the object sits, for the error (the root for a whole record).
    /// - Throws: ``PipelineError`` with ``PipelineError/Code/invalidJSON`` (and the byte offset) for bad JSON, or
    ///   ``PipelineError/Code/invalidField`` when the value is not an object.
    public init(parsing bytes: some Sequence<UInt8>, at path: FieldPath = .root) throws(PipelineError) {
        let value: JSONValue
        do {
            value = try JSONValue(parsing: bytes)
        } catch {
            throw PipelineError(.invalidJSON, at: path, "invalid JSON: \(error)")
        }
        guard let object = value.objectValue else {
            throw PipelineError(.invalidField, at: path, "expected an object, found \(value.typeDescription)")
        }
        self = object
    }
}
