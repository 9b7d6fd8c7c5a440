import Testing

/// End-to-end tests of issue 2: the real `fpfs` binary in a subprocess, a real FUSE mount on a
/// temporary mountpoint, and the ordinary tools a user would run against it.
///
/// Every test is nested in this one serialized suite, so mounts never run side by side: each one
/// runs a daemon and a build machine has two cores. Each test unmounts in a `defer`.
@Suite(.serialized, .timeLimit(.minutes(15)))
enum MountTests {}
