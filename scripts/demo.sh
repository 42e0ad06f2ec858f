#!/bin/sh
# SPDX-License-Identifier: MIT
# scripts/demo.sh - the main job (`make run`): on the default image (disk.sfs,
# or $SFS_IMAGE), write a file through the user-space ring, read it back with
# cat_ur, list the image, then run the default benchmark.
set -e
B=${O:-.}
IMG=${SFS_IMAGE:-disk.sfs}
export SFS_IMAGE="$IMG"
if [ ! -e "$IMG" ]; then
	echo "+ sfs mkfs $IMG"
	"$B/sfs" mkfs "$IMG"
fi
echo "+ test_ur_write_v2"
"$B/test_ur_write_v2"
echo "+ cat_ur test_write.txt"
"$B/cat_ur" test_write.txt
echo "+ sfs ls -l $IMG"
"$B/sfs" ls -l "$IMG"
echo "+ bench"
"$B/bench"
