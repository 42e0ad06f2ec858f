// SPDX-License-Identifier: MIT
// UrfsFileChannel.java - a java.nio.channels.FileChannel over the channel API
// (include/ur_chan.h, through liburfs_jni.so): one of three engines (Engine),
// with FileChannel's whole contract as the JDK's own FileChannel keeps it
// (tests/java/ChannelCompare.java runs both side by side), plus batches (many
// pages read or written fully in one submission, each with its own result)
// and registered buffers (direct ByteBuffers the engine uses with no copy).
// Calls on one channel are serialized (ur_chan.h: one thread at a time);
// blocking calls sit between begin() and end(), so an interrupt closes the
// channel (ClosedByInterruptException) once the call in flight has returned.
// Must never: call Native with a closed handle, report a short batch op as
// done, or let two channels of this JVM hold overlapping locks on one file.
package org.urfs.channel;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.FileLockInterruptionException;
import java.nio.channels.NonReadableChannelException;
import java.nio.channels.NonWritableChannelException;
import java.nio.channels.OverlappingFileLockException;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

public final class UrfsFileChannel extends FileChannel {
    private final Object ioLock = new Object();
    private static final AtomicLong IDS = new AtomicLong();
    private final long id = IDS.incrementAndGet();   // the order ioLocks are taken in
    private long h;                  // the struct urch; 0 once closed (under ioLock)
    private final String path;       // for messages
    private final Engine engine;
    private final boolean readable, writable;
    private final Object fileKey;    // the file's identity, for this JVM's lock table
    private long position;
    private ByteBuffer bounce;       // heap buffers go through it (the JDK does the same)

    private UrfsFileChannel(long h, String path, Engine engine, boolean readable,
                            boolean writable, Object fileKey) {
        this.h = h;
        this.path = path;
        this.engine = engine;
        this.readable = readable;
        this.writable = writable;
        this.fileKey = fileKey;
    }

    /** As FileChannel.open: READ, WRITE, CREATE, TRUNCATE_EXISTING, DSYNC and SYNC
     * (both: O_DSYNC), plus urfs's DIRECT (O_DIRECT: aligned buffers, positions and
     * lengths). image: the SimpleFS image for Engine.UR (null: $SFS_IMAGE, else disk.sfs);
     * path is then the file's name inside it. */
    public static UrfsFileChannel open(String path, Engine engine, String image,
                                       OpenOption... options) throws IOException {
        return open(path, engine, image, new HashSet<>(Arrays.asList(options)));
    }

    public static UrfsFileChannel open(String path, Engine engine, String image,
                                       Set<? extends OpenOption> options) throws IOException {
        Objects.requireNonNull(path);
        boolean writable = options.contains(StandardOpenOption.WRITE);
        boolean readable = options.contains(StandardOpenOption.READ) || !writable;
        int flags = 0;
        for (OpenOption o : options) {
            if (o == StandardOpenOption.CREATE && writable)
                flags |= Native.CREATE;
            else if (o == StandardOpenOption.TRUNCATE_EXISTING && writable)
                flags |= Native.TRUNC;
            else if (o == StandardOpenOption.DSYNC || o == StandardOpenOption.SYNC)
                flags |= Native.DSYNC;
            else if (o == DIRECT)
                flags |= Native.DIRECT;
            else if (o != StandardOpenOption.READ && o != StandardOpenOption.WRITE
                     && o != StandardOpenOption.CREATE && o != StandardOpenOption.TRUNCATE_EXISTING)
                throw new UnsupportedOperationException(o + " is not supported by urfs channels");
        }
        if (!writable)
            flags |= Native.RDONLY;
        long h = Native.open(path, flags, engine.code, image);
        if (h < 0)
            throw openError(path, h);
        Object key;
        try {
            key = fileKey(path, engine, image);
        } catch (IOException e) {
            Native.close(h);
            throw e;
        }
        return new UrfsFileChannel(h, path, engine, readable, writable, key);
    }

    /** The OpenOption for O_DIRECT. */
    public static final OpenOption DIRECT = new OpenOption() {
        @Override
        public String toString() {
            return "DIRECT";
        }
    };

    /** Removes a file (a name inside the image for Engine.UR): ur_chan.h's urch_unlink. */
    public static void delete(String path, Engine engine, String image) throws IOException {
        int r = Native.unlink(path, engine.code, image);
        if (r < 0)
            throw openError(path, r);
    }

    private static Object fileKey(String path, Engine engine, String image) throws IOException {
        if (engine == Engine.UR) {
            String img = image != null ? image : System.getenv("SFS_IMAGE");
            return "urfs-image:" + Path.of(img != null ? img : "disk.sfs").toRealPath() + ":" + path;
        }
        Path p = Path.of(path);
        Object k = Files.readAttributes(p, BasicFileAttributes.class).fileKey();
        return k != null ? k : p.toRealPath();
    }

    /** An error of open or delete as the JDK's file system reports it. */
    private static IOException openError(String path, long err) {
        if (err == -Native.ENOENT)
            return new NoSuchFileException(path);
        if (err == -Native.EACCES)
            return new AccessDeniedException(path);
        return new FileSystemException(path, null, Native.strerror((int) err));
    }

    static IOException error(String path, long err) {
        return new IOException(path + ": " + Native.strerror((int) err));
    }

    private IOException error(long err) {
        return error(path, err);
    }

    public Engine engine() {
        return engine;
    }

    // ---- the blocking-call frame ----

    private interface Op {
        long run() throws IOException;
    }

    /** Runs op on the open handle, serialized, between begin() and end().
     * end() runs after ioLock is let go: an interrupt closes the channel from
     * the interrupting thread, which holds our thread's blocker lock (end()
     * needs it) while implCloseChannel waits for ioLock. */
    private long io(Op op) throws IOException {
        return frame(this, this, op);
    }

    /** op with a's and b's handles open and both serialized (locks taken in a
     * fixed order, so two opposite transfers cannot deadlock), in a's frame. */
    private static long frame(UrfsFileChannel a, UrfsFileChannel b, Op op) throws IOException {
        boolean swap = a.id > b.id;
        Object first = swap ? b.ioLock : a.ioLock, second = swap ? a.ioLock : b.ioLock;
        boolean done = false;
        try {
            a.begin();
            synchronized (first) {
                synchronized (second) {
                    if (a.h == 0 || b.h == 0)   // closed, maybe by begin() (interrupted already)
                        throw new ClosedChannelException();
                    long r = op.run();
                    done = true;
                    return r;
                }
            }
        } finally {
            a.end(done);
        }
    }

    private void ensureOpen() throws IOException {
        if (!isOpen())
            throw new ClosedChannelException();
    }

    private void ensureReadable() throws IOException {
        ensureOpen();
        if (!readable)
            throw new NonReadableChannelException();
    }

    private void ensureWritable() throws IOException {
        ensureOpen();
        if (!writable)
            throw new NonWritableChannelException();
    }

    /** One read or write of b's remaining bytes at pos (under ioLock, handle open):
     * the bytes moved, -1 for a read at end of file; b's position advances. */
    private long transfer(boolean write, ByteBuffer b, long pos) throws IOException {
        if (!write && b.isReadOnly())
            throw new IllegalArgumentException("Read-only buffer");
        int len = b.remaining();
        if (len == 0)
            return 0;
        ByteBuffer d = b;
        int off = b.position();
        if (!b.isDirect()) {
            if (bounce == null || bounce.capacity() < len)
                bounce = ByteBuffer.allocateDirect(Math.max(len, 8192));
            d = bounce;
            off = 0;
            if (write)
                d.clear().put(b.duplicate());
        }
        long n = write ? Native.write(h, d, off, len, pos) : Native.read(h, d, off, len, pos);
        if (n < 0)
            throw error(n);
        if (!write && n == 0)
            return -1;
        if (d != b && !write)
            b.put(d.clear().limit((int) n));
        else
            b.position(b.position() + (int) n);
        return n;
    }

    // ---- reads and writes ----

    @Override
    public int read(ByteBuffer dst) throws IOException {
        Objects.requireNonNull(dst);
        ensureReadable();
        return (int) vectored(false, new ByteBuffer[] { dst }, 0, 1);
    }

    @Override
    public int read(ByteBuffer dst, long pos) throws IOException {
        return (int) positional(false, dst, pos);
    }

    @Override
    public long read(ByteBuffer[] dsts, int offset, int length) throws IOException {
        Objects.checkFromIndexSize(offset, length, dsts.length);
        ensureReadable();
        return vectored(false, dsts, offset, length);
    }

    @Override
    public int write(ByteBuffer src) throws IOException {
        Objects.requireNonNull(src);
        ensureWritable();
        return (int) vectored(true, new ByteBuffer[] { src }, 0, 1);
    }

    @Override
    public int write(ByteBuffer src, long pos) throws IOException {
        return (int) positional(true, src, pos);
    }

    @Override
    public long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
        Objects.checkFromIndexSize(offset, length, srcs.length);
        ensureWritable();
        return vectored(true, srcs, offset, length);
    }

    private long positional(boolean write, ByteBuffer b, long pos) throws IOException {
        Objects.requireNonNull(b);
        if (pos < 0)
            throw new IllegalArgumentException("Negative position");
        if (write)
            ensureWritable();
        else
            ensureReadable();
        return io(() -> transfer(write, b, pos));
    }

    /** Relative I/O, one buffer after another from the position, which moves;
     * stops at a short one. A read returns what it has, or -1 when it has
     * nothing at end of file. */
    private long vectored(boolean write, ByteBuffer[] bs, int offset, int length) throws IOException {
        return io(() -> {
            long total = 0;
            for (int i = offset; i < offset + length; i++) {
                int want = bs[i].remaining();
                long n = transfer(write, bs[i], position);
                if (n < 0)
                    return total > 0 ? total : -1;
                total += n;
                position += n;
                if (n < want)
                    break;
            }
            return total;
        });
    }

    // ---- position, size, truncate, force ----

    @Override
    public long position() throws IOException {
        ensureOpen();
        synchronized (ioLock) {
            return position;
        }
    }

    @Override
    public FileChannel position(long newPosition) throws IOException {
        ensureOpen();
        if (newPosition < 0)
            throw new IllegalArgumentException();
        synchronized (ioLock) {
            position = newPosition;
        }
        return this;
    }

    @Override
    public long size() throws IOException {
        ensureOpen();
        return io(() -> checked(Native.size(h)));
    }

    @Override
    public FileChannel truncate(long size) throws IOException {
        ensureOpen();
        if (size < 0)
            throw new IllegalArgumentException("Negative size");
        ensureWritable();
        io(() -> {
            if (size < checked(Native.size(h)))
                checked(Native.truncate(h, size));
            if (position > size)
                position = size;
            return 0;
        });
        return this;
    }

    @Override
    public void force(boolean metaData) throws IOException {
        ensureOpen();
        io(() -> checked(Native.force(h, metaData)));
    }

    private long checked(long r) throws IOException {
        if (r < 0)
            throw error(r);
        return r;
    }

    // ---- transfers ----

    @Override
    public long transferTo(long pos, long count, WritableByteChannel target) throws IOException {
        ensureOpen();
        if (!target.isOpen())
            throw new ClosedChannelException();
        if (!readable)
            throw new NonReadableChannelException();
        if (target instanceof UrfsFileChannel && !((UrfsFileChannel) target).writable)
            throw new NonWritableChannelException();
        if (pos < 0 || count < 0)
            throw new IllegalArgumentException();
        if (target instanceof UrfsFileChannel) {
            UrfsFileChannel t = (UrfsFileChannel) target;
            return frame(this, t, () -> {
                long n = checked(Native.transfer(h, pos, count, t.h, t.position));
                t.position += n;
                return n;
            });
        }
        long done = 0;
        ByteBuffer b = ByteBuffer.allocate((int) Math.min(count, 1 << 16));
        while (done < count) {
            b.clear().limit((int) Math.min(b.capacity(), count - done));
            int n = read(b, pos + done);
            if (n <= 0)
                break;
            b.flip();
            while (b.hasRemaining())
                target.write(b);
            done += n;
        }
        return done;
    }

    @Override
    public long transferFrom(ReadableByteChannel src, long pos, long count) throws IOException {
        ensureOpen();
        if (!src.isOpen())
            throw new ClosedChannelException();
        ensureWritable();
        if (pos < 0 || count < 0)
            throw new IllegalArgumentException();
        if (pos > size())
            return 0;
        if (src instanceof UrfsFileChannel) {
            UrfsFileChannel s = (UrfsFileChannel) src;
            if (!s.readable)
                throw new NonReadableChannelException();
            return frame(this, s, () -> {
                long n = checked(Native.transfer(s.h, s.position, count, h, pos));
                s.position += n;
                return n;
            });
        }
        long done = 0;
        ByteBuffer b = ByteBuffer.allocate((int) Math.min(count, 1 << 16));
        while (done < count) {
            b.clear().limit((int) Math.min(b.capacity(), count - done));
            int n = src.read(b);
            if (n <= 0)
                break;
            b.flip();
            write(b, pos + done);
            done += n;
        }
        return done;
    }

    @Override
    public MappedByteBuffer map(MapMode mode, long pos, long size) {
        throw new UnsupportedOperationException("map: urfs channels have no mapping");
    }

    // ---- locks ----

    /** This JVM's locks, by file: the JDK's FileLockTable. */
    private static final Map<Object, List<Lock>> LOCKS = new HashMap<>();

    private static final class Lock extends FileLock {
        private boolean released;   // under LOCKS

        Lock(UrfsFileChannel ch, long pos, long size, boolean shared) {
            super(ch, pos, size, shared);
        }

        @Override
        public boolean isValid() {
            synchronized (LOCKS) {
                return !released && channel().isOpen();
            }
        }

        @Override
        public void release() throws IOException {
            UrfsFileChannel ch = (UrfsFileChannel) channel();
            if (!ch.isOpen())
                throw new ClosedChannelException();
            if (isValid()) {
                ch.io(() -> ch.checked(Native.unlock(ch.h, position(), nativeLen(size()))));
                ch.forget(this);
            }
        }
    }

    private static long nativeLen(long size) {
        return size == Long.MAX_VALUE ? 0 : size;   // 0: to the end and beyond, as the JDK's
    }

    /** Adds l to the table, or OverlappingFileLockException. */
    private void remember(Lock l) {
        synchronized (LOCKS) {
            List<Lock> list = LOCKS.computeIfAbsent(fileKey, k -> new ArrayList<>());
            for (Lock o : list)
                if (o.overlaps(l.position(), l.size()))
                    throw new OverlappingFileLockException();
            list.add(l);
        }
    }

    private void forget(Lock l) {
        synchronized (LOCKS) {
            l.released = true;
            List<Lock> list = LOCKS.get(fileKey);
            if (list != null) {
                list.remove(l);
                if (list.isEmpty())
                    LOCKS.remove(fileKey);
            }
        }
    }

    private Lock newLock(long pos, long size, boolean shared) throws IOException {
        ensureOpen();
        if (shared && !readable)
            throw new NonReadableChannelException();
        if (!shared && !writable)
            throw new NonWritableChannelException();
        Lock l = new Lock(this, pos, size, shared);
        remember(l);
        return l;
    }

    @Override
    public FileLock lock(long pos, long size, boolean shared) throws IOException {
        Lock l = newLock(pos, size, shared);
        boolean done = false;
        try {
            begin();
            // Host files' OFD locks have no timeout: try, then wait a little, so an
            // interrupt or a close is seen; UR waits in the server, in slices.
            long slice = engine == Engine.UR ? 50_000_000L : 0;
            for (long nap = 100_000; isOpen(); nap = Math.min(nap * 2, 10_000_000)) {
                int r;
                synchronized (ioLock) {
                    if (h == 0)
                        break;
                    r = Native.lock(h, l.position(), nativeLen(l.size()), shared, slice);
                }
                if (r == 0) {
                    done = true;
                    break;
                }
                if (r != -Native.EAGAIN && r != -Native.ETIMEDOUT)
                    throw error(r);
                if (slice == 0)
                    LockSupport.parkNanos(nap);
            }
        } finally {
            if (!done)
                forget(l);
            try {
                end(done);
            } catch (ClosedByInterruptException e) {
                throw new FileLockInterruptionException();   // as the JDK's lock()
            }
        }
        return l;
    }

    @Override
    public FileLock tryLock(long pos, long size, boolean shared) throws IOException {
        Lock l = newLock(pos, size, shared);
        try {
            long r = io(() -> Native.lock(h, l.position(), nativeLen(l.size()), shared, 0));
            if (r == -Native.EAGAIN) {
                forget(l);
                return null;
            }
            checked(r);
            return l;
        } catch (IOException | RuntimeException e) {
            forget(l);
            throw e;
        }
    }

    @Override
    protected void implCloseChannel() throws IOException {
        synchronized (LOCKS) {   // the channel's locks go with it (urch_close drops them)
            List<Lock> list = LOCKS.get(fileKey);
            if (list != null) {
                list.removeIf(l -> l.channel() == this);
                if (list.isEmpty())
                    LOCKS.remove(fileKey);
            }
        }
        synchronized (ioLock) {
            if (h != 0) {
                int r = Native.close(h);
                h = 0;
                if (r < 0)
                    throw error(r);
            }
        }
    }

    // ---- batches and registered buffers ----

    /** Reads each buffer's remaining bytes fully at its position, all in one
     * submission: each op's result is its length (the buffer's position moved
     * past it) or a negative errno (-61 ENODATA: end of file first). Throws only
     * when the call itself could not run. */
    public long[] readFully(ByteBuffer[] bufs, long[] positions) throws IOException {
        return batch(0, bufs, positions, false);
    }

    /** Writes each buffer's remaining bytes fully at its position, in one submission. */
    public long[] writeFully(ByteBuffer[] bufs, long[] positions) throws IOException {
        return batch(1, bufs, positions, false);
    }

    /** writeFully, then force(metaData) in the same submission behind the writes;
     * if the force fails every write carries its error (not durable). */
    public long[] writeFullyAndForce(ByteBuffer[] bufs, long[] positions, boolean metaData)
            throws IOException {
        return batch(2, bufs, positions, metaData);
    }

    private long[] batch(int kind, ByteBuffer[] bufs, long[] positions, boolean meta)
            throws IOException {
        if (bufs.length != positions.length)
            throw new IllegalArgumentException("one position per buffer");
        if (kind == 0)
            ensureReadable();
        else
            ensureWritable();
        int n = bufs.length;
        ByteBuffer[] d = new ByteBuffer[n];
        int[] offs = new int[n], lens = new int[n];
        long[] res = new long[n];
        for (int i = 0; i < n; i++) {
            if (positions[i] < 0)
                throw new IllegalArgumentException("Negative position");
            if (kind == 0 && bufs[i].isReadOnly())
                throw new IllegalArgumentException("Read-only buffer");
            lens[i] = bufs[i].remaining();
            if (bufs[i].isDirect()) {
                d[i] = bufs[i];
                offs[i] = bufs[i].position();
            } else {   // a heap buffer: a copy (direct or registered buffers have none)
                d[i] = ByteBuffer.allocateDirect(lens[i]);
                if (kind != 0)
                    d[i].put(bufs[i].duplicate());
            }
        }
        long r = io(() -> Native.batch(h, kind, d, offs, lens, positions.clone(), res, meta));
        if (r < 0)
            throw error(r);
        for (int i = 0; i < n; i++) {
            if (res[i] != lens[i])
                continue;
            if (d[i] != bufs[i] && kind == 0)
                bufs[i].put(d[i].clear());
            else
                bufs[i].position(bufs[i].position() + lens[i]);
        }
        return res;
    }

    /** The text of a batch result: "N bytes" or the error's strerror. */
    public static String describe(long result) {
        return result >= 0 ? result + " bytes" : Native.strerror((int) result);
    }

    /** count buffers of size bytes (4 KiB aligned) registered with the engine
     * (io_uring fixed buffers; UR: inside the shared region): I/O from or into
     * them moves no copy. They are valid until the channel closes, and never
     * after: do not keep them. */
    public ByteBuffer[] registerBuffers(int size, int count) throws IOException {
        ensureOpen();
        int[] err = new int[1];
        ByteBuffer[][] out = new ByteBuffer[1][];
        io(() -> {
            out[0] = Native.registerBuffers(h, size, count, err);
            return 0;
        });
        if (out[0] == null)
            throw error(err[0]);
        return out[0];
    }

    /** {reads and writes sent to the engine, of which fixed (zero copy)}. */
    public long[] stats() throws IOException {
        ensureOpen();
        long[] st = new long[2];
        io(() -> checked(Native.stats(h, st)));
        return st;
    }
}
