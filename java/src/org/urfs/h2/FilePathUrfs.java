// SPDX-License-Identifier: MIT
// FilePathUrfs.java - H2's file layer (org.h2.store.fs.FilePath) on urfs
// channels, under the prefix "urfs:" (docs/JAVA.md):
//   jdbc:h2:urfs:/path/db               host files; every other file system call
//                                       goes to H2's own FilePathDisk, open()
//                                       returns an UrfsFileChannel (engine: the
//                                       system property urfs.engine, io_uring by
//                                       default (the drop-in where the kernel's ring
//                                       is blocked), or psync)
//   jdbc:h2:urfs:image=/path/img.sfs:/db a database inside a SimpleFS image
//                                       (FilePathUrfsImage)
// Call FilePathUrfs.register() once before the first such URL.
// Must never hand H2 a channel of another engine than the one named, or change
// H2's names of files (they are the same as on H2's default store).
package org.urfs.h2;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.OpenOption;
import java.nio.file.StandardOpenOption;
import java.util.HashSet;
import java.util.Set;
import org.h2.store.fs.FilePath;
import org.h2.store.fs.FilePathWrapper;
import org.urfs.channel.Engine;
import org.urfs.channel.UrfsFileChannel;

public class FilePathUrfs extends FilePathWrapper {
    static final String SCHEME = "urfs";

    /** Makes "urfs:" known to H2 (FilePath.register). */
    public static void register() {
        FilePath.register(new FilePathUrfs());
    }

    @Override
    public String getScheme() {
        return SCHEME;
    }

    @Override
    public FilePathWrapper getPath(String path) {
        if (path.startsWith(FilePathUrfsImage.PREFIX))
            return new FilePathUrfsImage(path);
        return super.getPath(path);
    }

    /** H2's modes ("r", "rw", "rws", "rwd") as open options. */
    static Set<OpenOption> options(String mode) {
        Set<OpenOption> o = new HashSet<>();
        o.add(StandardOpenOption.READ);
        if (mode.startsWith("rw")) {
            o.add(StandardOpenOption.WRITE);
            o.add(StandardOpenOption.CREATE);
        }
        if (mode.equals("rws") || mode.equals("rwd"))
            o.add(StandardOpenOption.DSYNC);
        return o;
    }

    static Engine hostEngine() {
        return Engine.valueOf(System.getProperty("urfs.engine", "io_uring").toUpperCase());
    }

    @Override
    public FileChannel open(String mode) throws IOException {
        return UrfsFileChannel.open(getBase().toString(), hostEngine(), null, options(mode));
    }
}
