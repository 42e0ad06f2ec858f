// SPDX-License-Identifier: MIT
// Native.java - the JNI entry points of liburfs_jni.so (java/jni/urfs_jni.c),
// one per call of include/ur_chan.h; each returns what the C call returns
// (>= 0, or a negative errno). Only UrfsFileChannel calls them: it checks the
// arguments, serializes the calls on a channel and turns errors into exceptions.
// Must never be called with a handle that was closed.
package org.urfs.channel;

import java.nio.ByteBuffer;

final class Native {
    static {
        String lib = System.getProperty("urfs.jni");   // a path, else the loader's search
        if (lib != null)
            System.load(lib);
        else
            System.loadLibrary("urfs_jni");
    }

    private Native() {
    }

    static native long open(String path, int flags, int engine, String image);
    static native int close(long h);
    static native int unlink(String path, int engine, String image);
    static native String strerror(int err);
    static native long read(long h, ByteBuffer buf, int off, int len, long pos);
    static native long write(long h, ByteBuffer buf, int off, int len, long pos);
    static native int batch(long h, int kind, ByteBuffer[] bufs, int[] offs, int[] lens,
                            long[] pos, long[] res, boolean metadata);
    static native long size(long h);
    static native int truncate(long h, long size);
    static native int force(long h, boolean metadata);
    static native int lock(long h, long pos, long len, boolean shared, long timeoutNs);
    static native int unlock(long h, long pos, long len);
    static native long transfer(long src, long srcPos, long count, long dst, long dstPos);
    static native ByteBuffer[] registerBuffers(long h, int len, int nr, int[] err);
    static native int stats(long h, long[] out);

    // ur_chan.h's constants
    static final int CREATE = 0x01, TRUNC = 0x02, RDONLY = 0x04, DIRECT = 0x08, DSYNC = 0x10;
    static final int EAGAIN = 11, ENOENT = 2, EACCES = 13, ETIMEDOUT = 110, ENODATA = 61;
}
