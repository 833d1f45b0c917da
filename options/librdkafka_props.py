"""Prints librdkafka's own table of configuration properties.

Usage: python librdkafka_props.py

Loads the librdkafka that the installed confluent-kafka wheel bundles
(without importing confluent_kafka), writes one line with its version,
then what rd_kafka_conf_properties_show() prints.
"""

import ctypes
import glob
import os
import sys
import sysconfig


def main():
    site = sysconfig.get_paths()["purelib"]
    found = sorted(
        glob.glob(os.path.join(site, "confluent_kafka.libs", "librdkafka*.so*"))
        + glob.glob(os.path.join(site, "confluent_kafka", ".dylibs", "librdkafka*.dylib"))
    )
    if len(found) != 1:
        sys.stderr.write("want one librdkafka in the confluent-kafka wheel under %s, found %r\n" % (site, found))
        return 1
    lib = ctypes.CDLL(found[0])
    lib.rd_kafka_version_str.restype = ctypes.c_char_p
    sys.stdout.write("librdkafka %s\n" % lib.rd_kafka_version_str().decode())
    sys.stdout.flush()

    libc = ctypes.CDLL(None)
    libc.fdopen.restype = ctypes.c_void_p
    libc.fdopen.argtypes = [ctypes.c_int, ctypes.c_char_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    lib.rd_kafka_conf_properties_show.argtypes = [ctypes.c_void_p]
    out = libc.fdopen(os.dup(sys.stdout.fileno()), b"w")
    if not out:
        sys.stderr.write("fdopen failed\n")
        return 1
    lib.rd_kafka_conf_properties_show(out)
    libc.fclose(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
