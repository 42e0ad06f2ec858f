// SPDX-License-Identifier: MIT
// Engine.java - the channel's engines (ur_chan.h's enum urch_engine).
package org.urfs.channel;

public enum Engine {
    /** pread/pwrite on a host file. */
    PSYNC(0),
    /** The kernel's io_uring on a host file (or the liburing drop-in, when it is the liburing loaded). */
    IO_URING(1),
    /** This project's engine: a file inside a SimpleFS image, through simplefs_server. */
    UR(2);

    final int code;

    Engine(int code) {
        this.code = code;
    }
}
