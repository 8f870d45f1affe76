package plugin

// Options and RegisterWith let tests shorten the kind's connection backoff.
type Options = options

var RegisterWith = register
