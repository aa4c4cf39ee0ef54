// Placeholder: replaced by the templates work.
