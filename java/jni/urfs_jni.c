/* SPDX-License-Identifier: MIT */
/*
 * urfs_jni.c - the JNI half of the Java binding (java/src/org/urfs/channel):
 * org.urfs.channel.Native's methods, each a thin call of include/ur_chan.h.
 * A channel handle is the struct urch pointer as a jlong; buffers are direct
 * ByteBuffers (their address plus an offset the Java side has checked).
 * Every call returns what ur_chan.h returns (>= 0, or a negative errno): the
 * Java side turns errors into exceptions, so nothing here throws but the
 * OutOfMemoryError of a failed JNI allocation.
 * Must never: keep a JNI reference or a Java array pointer past the call, or
 * touch a handle the Java side has closed (UrfsFileChannel serializes calls on
 * a channel and zeroes its handle at close).
 */
#include <errno.h>
#include <jni.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ur_chan.h"

#define CH(h) ((struct urch *)(uintptr_t)(h))
#define FN(name) Java_org_urfs_channel_Native_##name

/* A direct buffer's address + off, or NULL (a heap buffer, or off/len past its capacity). */
static char *addr_of(JNIEnv *env, jobject buf, jint off, jint len)
{
	if (!buf || off < 0 || len < 0)
		return NULL;
	char *a = (*env)->GetDirectBufferAddress(env, buf);
	jlong cap = (*env)->GetDirectBufferCapacity(env, buf);
	if (!a || (jlong)off + len > cap)
		return NULL;
	return a + off;
}

/* A Java string as a C string for the call (NULL for null), released by put_str. */
static const char *get_str(JNIEnv *env, jstring s)
{
	return s ? (*env)->GetStringUTFChars(env, s, NULL) : NULL;
}

static void put_str(JNIEnv *env, jstring s, const char *c)
{
	if (s && c)
		(*env)->ReleaseStringUTFChars(env, s, c);
}

JNIEXPORT jlong JNICALL FN(open)(JNIEnv *env, jclass cls, jstring jpath, jint flags,
				 jint engine, jstring jimage)
{
	(void)cls;
	const char *path = get_str(env, jpath), *image = get_str(env, jimage);
	struct urch_opts o;
	struct urch *ch = NULL;
	int r = -ENOMEM;

	memset(&o, 0, sizeof o);
	o.image = image;
	if (path && (!jimage || image))
		r = urch_open_opts(path, (unsigned)flags, engine, &o, &ch);
	put_str(env, jpath, path);
	put_str(env, jimage, image);
	return r < 0 ? r : (jlong)(uintptr_t)ch;
}

JNIEXPORT jint JNICALL FN(close)(JNIEnv *env, jclass cls, jlong h)
{
	(void)env; (void)cls;
	return urch_close(CH(h));
}

JNIEXPORT jint JNICALL FN(unlink)(JNIEnv *env, jclass cls, jstring jpath, jint engine,
				  jstring jimage)
{
	(void)cls;
	const char *path = get_str(env, jpath), *image = get_str(env, jimage);
	struct urch_opts o;
	int r = -ENOMEM;

	memset(&o, 0, sizeof o);
	o.image = image;
	if (path && (!jimage || image))
		r = urch_unlink(path, engine, &o);
	put_str(env, jpath, path);
	put_str(env, jimage, image);
	return r;
}

JNIEXPORT jstring JNICALL FN(strerror)(JNIEnv *env, jclass cls, jint err)
{
	(void)cls;
	char buf[128];
	return (*env)->NewStringUTF(env, strerror_r(err < 0 ? -err : err, buf, sizeof buf));
}

/* read/write: len bytes of the direct buffer buf from off, at file position pos. */
JNIEXPORT jlong JNICALL FN(read)(JNIEnv *env, jclass cls, jlong h, jobject buf, jint off,
				 jint len, jlong pos)
{
	(void)cls;
	char *a = addr_of(env, buf, off, len);
	return a ? urch_read(CH(h), a, (size_t)len, (uint64_t)pos) : -EFAULT;
}

JNIEXPORT jlong JNICALL FN(write)(JNIEnv *env, jclass cls, jlong h, jobject buf, jint off,
				  jint len, jlong pos)
{
	(void)cls;
	char *a = addr_of(env, buf, off, len);
	return a ? urch_write(CH(h), a, (size_t)len, (uint64_t)pos) : -EFAULT;
}

/* One batch: kind 0 read fully, 1 write fully, 2 write then force(metadata).
 * Op i is lens[i] bytes of bufs[i] from offs[i] at pos[i]; its result goes to
 * res[i]. Returns the number of ops that failed, or a negative errno. */
JNIEXPORT jint JNICALL FN(batch)(JNIEnv *env, jclass cls, jlong h, jint kind, jobjectArray bufs,
				 jintArray offs, jintArray lens, jlongArray pos, jlongArray res,
				 jboolean metadata)
{
	(void)cls;
	jsize n = (*env)->GetArrayLength(env, bufs);
	struct urch_op *ops = calloc(n ? (size_t)n : 1, sizeof *ops);
	jint *o = calloc(n ? (size_t)n : 1, sizeof *o), *l = calloc(n ? (size_t)n : 1, sizeof *l);
	jlong *p = calloc(n ? (size_t)n : 1, sizeof *p);
	int r = -ENOMEM;

	if (!ops || !o || !l || !p)
		goto out;
	(*env)->GetIntArrayRegion(env, offs, 0, n, o);
	(*env)->GetIntArrayRegion(env, lens, 0, n, l);
	(*env)->GetLongArrayRegion(env, pos, 0, n, p);
	for (jsize i = 0; i < n; i++) {
		jobject b = (*env)->GetObjectArrayElement(env, bufs, i);
		ops[i].buf = addr_of(env, b, o[i], l[i]);   /* NULL: the op gets -EFAULT */
		ops[i].len = (size_t)l[i];
		ops[i].pos = (uint64_t)p[i];
		(*env)->DeleteLocalRef(env, b);
	}
	if (kind == 0)
		r = urch_batch_read_fully(CH(h), ops, (size_t)n);
	else if (kind == 1)
		r = urch_batch_write_fully(CH(h), ops, (size_t)n);
	else
		r = urch_batch_write_force(CH(h), ops, (size_t)n, metadata ? 1 : 0);
	for (jsize i = 0; i < n; i++)
		p[i] = ops[i].result;
	(*env)->SetLongArrayRegion(env, res, 0, n, p);
out:
	free(ops);
	free(o);
	free(l);
	free(p);
	return r;
}

JNIEXPORT jlong JNICALL FN(size)(JNIEnv *env, jclass cls, jlong h)
{
	(void)env; (void)cls;
	return urch_size(CH(h));
}

JNIEXPORT jint JNICALL FN(truncate)(JNIEnv *env, jclass cls, jlong h, jlong size)
{
	(void)env; (void)cls;
	return urch_truncate(CH(h), (uint64_t)size);
}

JNIEXPORT jint JNICALL FN(force)(JNIEnv *env, jclass cls, jlong h, jboolean metadata)
{
	(void)env; (void)cls;
	return urch_force(CH(h), metadata ? 1 : 0);
}

/* timeout_ns as urch_lock_timeout (0: try, < 0: wait). */
JNIEXPORT jint JNICALL FN(lock)(JNIEnv *env, jclass cls, jlong h, jlong pos, jlong len,
				jboolean shared, jlong timeout_ns)
{
	(void)env; (void)cls;
	return urch_lock_timeout(CH(h), (uint64_t)pos, (uint64_t)len, shared ? 1 : 0, timeout_ns);
}

JNIEXPORT jint JNICALL FN(unlock)(JNIEnv *env, jclass cls, jlong h, jlong pos, jlong len)
{
	(void)env; (void)cls;
	return urch_unlock(CH(h), (uint64_t)pos, (uint64_t)len);
}

JNIEXPORT jlong JNICALL FN(transfer)(JNIEnv *env, jclass cls, jlong src, jlong src_pos,
				     jlong count, jlong dst, jlong dst_pos)
{
	(void)env; (void)cls;
	return urch_transfer_to(CH(src), (uint64_t)src_pos, (uint64_t)count, CH(dst),
				(uint64_t)dst_pos);
}

/* nr registered buffers of len bytes as direct ByteBuffers (valid until the
 * channel closes), or null with the error in err[0]. */
JNIEXPORT jobjectArray JNICALL FN(registerBuffers)(JNIEnv *env, jclass cls, jlong h, jint len,
						   jint nr, jintArray err)
{
	(void)cls;
	jclass bb = (*env)->FindClass(env, "java/nio/ByteBuffer");
	void **bufs = calloc(nr > 0 ? (size_t)nr : 1, sizeof *bufs);
	jobjectArray arr = NULL;
	jint r = -ENOMEM;

	if (!bb || !bufs)
		goto out;
	r = len > 0 && nr > 0 ? urch_register_buffers(CH(h), (size_t)len, (unsigned)nr, bufs)
			      : -EINVAL;
	if (r < 0)
		goto out;
	arr = (*env)->NewObjectArray(env, nr, bb, NULL);
	for (jint i = 0; arr && i < nr; i++) {
		jobject b = (*env)->NewDirectByteBuffer(env, bufs[i], len);
		if (!b) {
			arr = NULL;
			break;
		}
		(*env)->SetObjectArrayElement(env, arr, i, b);
		(*env)->DeleteLocalRef(env, b);
	}
	if (!arr) {
		urch_unregister_buffers(CH(h));
		r = -ENOMEM;
	}
out:
	free(bufs);
	(*env)->SetIntArrayRegion(env, err, 0, 1, &r);
	return arr;
}

/* stats: {ops, fixed_ops}. */
JNIEXPORT jint JNICALL FN(stats)(JNIEnv *env, jclass cls, jlong h, jlongArray out)
{
	(void)cls;
	struct urch_stats st;
	int r = urch_get_stats(CH(h), &st);
	if (r >= 0) {
		jlong v[2] = { (jlong)st.ops, (jlong)st.fixed_ops };
		(*env)->SetLongArrayRegion(env, out, 0, 2, v);
	}
	return r;
}
