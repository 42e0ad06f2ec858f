// SPDX-License-Identifier: MIT
// FilePathUrfsImage.java - the image form of FilePathUrfs:
// "urfs:image=IMAGE:/NAME", the file NAME inside the SimpleFS image IMAGE (an
// absolute host path), through the UR engine (simplefs_server). SimpleFS has
// one flat directory: "urfs:image=IMAGE:/" is its only directory, NAME is 1 to
// 63 bytes with no '/'. The channel API has no directory listing: listing
// the image's directory names the files this JVM has opened or created in it
// that still exist (H2 lists only to delete its old *.temp.db files: one left
// by a JVM that died stays until `sfs rm`). Renaming is refused (a DbException:
// not supported); the last-modified time is 0.
// Must never touch the image but through the channel API (the server owns it).
package org.urfs.h2;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ThreadLocalRandom;
import org.h2.message.DbException;
import org.h2.store.fs.FilePath;
import org.h2.store.fs.FilePathWrapper;
import org.urfs.channel.Engine;
import org.urfs.channel.UrfsFileChannel;

public class FilePathUrfsImage extends FilePathWrapper {
    static final String PREFIX = FilePathUrfs.SCHEME + ":image=";
    private final String image;   // the image's host path
    private final String file;    // the name inside it; "" for its directory

    FilePathUrfsImage(String path) {
        int sep = path.indexOf(":/", PREFIX.length());
        if (sep < 0)
            throw DbException.getUnsupportedException("urfs image path without \":/NAME\": " + path);
        image = path.substring(PREFIX.length(), sep);
        String f = path.substring(sep + 2);
        while (f.startsWith("/"))
            f = f.substring(1);
        file = f;
        name = PREFIX + image + ":/" + file;
    }

    @Override
    public String getScheme() {
        return FilePathUrfs.SCHEME;
    }

    @Override
    public FilePathWrapper getPath(String path) {
        return new FilePathUrfsImage(path);
    }

    @Override
    public FilePath unwrap() {
        return this;
    }

    /** The names this JVM has opened in each image (the listing, above). */
    private static final Map<String, Set<String>> KNOWN = new HashMap<>();

    private UrfsFileChannel channel(String mode) throws IOException {
        if (file.isEmpty() || file.indexOf('/') >= 0)
            throw new NoSuchFileException(name, null, "not a SimpleFS file name");
        UrfsFileChannel ch = UrfsFileChannel.open(file, Engine.UR, image, FilePathUrfs.options(mode));
        synchronized (KNOWN) {
            KNOWN.computeIfAbsent(image, k -> new TreeSet<>()).add(file);
        }
        return ch;
    }

    @Override
    public FileChannel open(String mode) throws IOException {
        return channel(mode);
    }

    @Override
    public boolean exists() {
        if (file.isEmpty())
            return true;
        try {
            channel("r").close();
            return true;
        } catch (NoSuchFileException e) {
            return false;
        } catch (IOException e) {
            throw DbException.convertIOException(e, name);
        }
    }

    @Override
    public long size() {
        try (FileChannel ch = channel("r")) {
            return ch.size();
        } catch (NoSuchFileException e) {
            return 0;
        } catch (IOException e) {
            throw DbException.convertIOException(e, name);
        }
    }

    @Override
    public boolean createFile() {
        if (exists())
            return false;
        try {
            channel("rw").close();
            return true;
        } catch (IOException e) {
            throw DbException.convertIOException(e, name);
        }
    }

    @Override
    public void delete() {
        try {
            UrfsFileChannel.delete(file, Engine.UR, image);
        } catch (NoSuchFileException e) {
            // as FilePathDisk: nothing to delete
        } catch (IOException e) {
            throw DbException.convertIOException(e, name);
        }
    }

    @Override
    public List<FilePath> newDirectoryStream() {
        if (!file.isEmpty())
            throw DbException.getUnsupportedException("not a directory: " + name);
        List<String> names;
        synchronized (KNOWN) {
            names = new ArrayList<>(KNOWN.getOrDefault(image, Set.of()));
        }
        List<FilePath> list = new ArrayList<>();
        for (String n : names) {
            FilePath p = getPath(PREFIX + image + ":/" + n);
            if (p.exists())
                list.add(p);
        }
        return list;
    }

    @Override
    public void moveTo(FilePath newName, boolean atomicReplace) {
        throw DbException.getUnsupportedException("renaming inside a SimpleFS image: " + name);
    }

    @Override
    public FilePath toRealPath() {
        return this;
    }

    @Override
    public FilePath getParent() {
        return file.isEmpty() ? null : new FilePathUrfsImage(PREFIX + image + ":/");
    }

    @Override
    public boolean isDirectory() {
        return file.isEmpty();
    }

    @Override
    public boolean isRegularFile() {
        return !file.isEmpty() && exists();
    }

    @Override
    public boolean isAbsolute() {
        return true;
    }

    @Override
    public long lastModified() {
        return 0;
    }

    @Override
    public boolean canWrite() {
        return true;
    }

    @Override
    public boolean setReadOnly() {
        return false;
    }

    @Override
    public void createDirectory() {
        if (!file.isEmpty())
            throw DbException.getUnsupportedException("a directory inside a SimpleFS image: " + name);
    }

    @Override
    public String getName() {
        return file;
    }

    @Override
    public OutputStream newOutputStream(boolean append) throws IOException {
        FileChannel ch = channel("rw");
        if (!append)
            ch.truncate(0);
        return FilePath.newFileChannelOutputStream(ch, append);
    }

    @Override
    public InputStream newInputStream() throws IOException {
        return Channels.newInputStream(channel("r"));
    }

    @Override
    public FilePath createTempFile(String suffix, boolean inTempDir) throws IOException {
        for (;;) {
            FilePath p = getPath(name + "." + ThreadLocalRandom.current().nextInt(1 << 30) + suffix);
            if (p.createFile())
                return p;
        }
    }
}
