package e2e

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// boto3Script drives the endpoint with boto3 and prints one line per
// failed check ("FAIL ...") or "OK". Arguments: endpoint, access key id,
// secret.
const boto3Script = `
import sys, hashlib, base64, urllib.request, urllib.error
import boto3, botocore
from botocore.config import Config
ep, ak, sk = sys.argv[1:4]
s3 = boto3.client("s3", endpoint_url=ep, aws_access_key_id=ak, aws_secret_access_key=sk, region_name="us-east-1",
    config=Config(signature_version="s3v4", s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
bad = []
def status(f):
    try:
        f()
        return 200
    except botocore.exceptions.ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"]
s3.create_bucket(Bucket="btk")
body = b"x" * 70000
# boto3's default x-amz-checksum-crc32 (or crc64nvme) is sent and checked
s3.put_object(Bucket="btk", Key="a/b.bin", Body=body)
if s3.get_object(Bucket="btk", Key="a/b.bin")["Body"].read() != body: bad.append("GET differs")
# a Content-MD5 of other bytes is refused and leaves no object
wrong = base64.b64encode(hashlib.md5(b"other").digest()).decode()
st = status(lambda: s3.put_object(Bucket="btk", Key="a/md5.bin", Body=body, ContentMD5=wrong))
if st != 400: bad.append(f"wrong Content-MD5: {st}, want 400")
if status(lambda: s3.head_object(Bucket="btk", Key="a/md5.bin")) != 404: bad.append("a PUT with a wrong Content-MD5 left an object")
# a wrong x-amz-checksum-sha256 is refused
st = status(lambda: s3.put_object(Bucket="btk", Key="a/sum.bin", Body=body, ChecksumSHA256=base64.b64encode(hashlib.sha256(b"other").digest()).decode()))
if st != 400: bad.append(f"wrong x-amz-checksum-sha256: {st}, want 400")
# presigned GET and PUT
url = s3.generate_presigned_url("get_object", Params={"Bucket": "btk", "Key": "a/b.bin"}, ExpiresIn=300)
if urllib.request.urlopen(url).read() != body: bad.append("presigned GET differs")
url = s3.generate_presigned_url("put_object", Params={"Bucket": "btk", "Key": "a/pre.bin"}, ExpiresIn=300)
try:
    urllib.request.urlopen(urllib.request.Request(url, data=b"presigned", method="PUT")).read()
except urllib.error.HTTPError as e:
    bad.append(f"presigned PUT: {e.code} {e.read()[:300]}")
if status(lambda: s3.get_object(Bucket="btk", Key="a/pre.bin")["Body"].read() == b"presigned" or 1/0) != 200: bad.append("presigned PUT not stored")
try:
    urllib.request.urlopen(url[:-1] + ("0" if url[-1] != "0" else "1"))
    bad.append("a tampered presigned URL was taken")
except urllib.error.HTTPError as e:
    if e.code != 403: bad.append(f"tampered presigned URL: {e.code}, want 403")
# anonymous requests are refused
try:
    urllib.request.urlopen(ep + "/btk/a/b.bin")
    bad.append("an anonymous GET was served")
except urllib.error.HTTPError as e:
    if e.code != 403: bad.append(f"anonymous GET: {e.code}, want 403")
# multipart: abort leaves nothing; list_parts and list_multipart_uploads see the upload
up = s3.create_multipart_upload(Bucket="btk", Key="m/obj")["UploadId"]
s3.upload_part(Bucket="btk", Key="m/obj", UploadId=up, PartNumber=1, Body=b"p" * (5 << 20))
if [p["PartNumber"] for p in s3.list_parts(Bucket="btk", Key="m/obj", UploadId=up)["Parts"]] != [1]: bad.append("list_parts")
if [u["UploadId"] for u in s3.list_multipart_uploads(Bucket="btk").get("Uploads", [])] != [up]: bad.append("list_multipart_uploads")
s3.abort_multipart_upload(Bucket="btk", Key="m/obj", UploadId=up)
if s3.list_multipart_uploads(Bucket="btk").get("Uploads"): bad.append("an aborted upload is still listed")
st = status(lambda: s3.upload_part(Bucket="btk", Key="m/obj", UploadId=up, PartNumber=2, Body=b"q"))
if st != 404: bad.append(f"a part of an aborted upload: {st}, want 404")
# complete with a part missing
up = s3.create_multipart_upload(Bucket="btk", Key="m/obj")["UploadId"]
e1 = s3.upload_part(Bucket="btk", Key="m/obj", UploadId=up, PartNumber=1, Body=b"p" * (5 << 20))["ETag"]
st = status(lambda: s3.complete_multipart_upload(Bucket="btk", Key="m/obj", UploadId=up,
    MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e1}]}))
if st != 400: bad.append(f"complete naming a part never sent: {st}, want 400")
s3.complete_multipart_upload(Bucket="btk", Key="m/obj", UploadId=up, MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1}]})
if s3.head_object(Bucket="btk", Key="m/obj")["ContentLength"] != 5 << 20: bad.append("the completed object's size")
# bucket delete: refused while not empty
if status(lambda: s3.delete_bucket(Bucket="btk")) != 409: bad.append("deleting a bucket with objects")
s3.delete_objects(Bucket="btk", Delete={"Objects": [{"Key": k} for k in ("a/b.bin", "a/pre.bin", "m/obj")]})
s3.delete_bucket(Bucket="btk")
if "btk" in [b["Name"] for b in s3.list_buckets()["Buckets"]]: bad.append("the deleted bucket is listed")
print("\n".join("FAIL " + b for b in bad) if bad else "OK")
`

// TestS3Boto3 drives `tessera up --s3` with boto3 (skipped where boto3
// does not import, outside CI): default checksums, a wrong Content-MD5
// and x-amz-checksum refused with nothing stored, presigned GET and PUT,
// a tampered presigned URL and an anonymous request refused, list parts
// and uploads, abort, a complete naming a missing part, bucket delete.
func TestS3Boto3(t *testing.T) {
	if err := exec.Command("python3", "-c", "import boto3").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("boto3 does not import (pip install boto3)")
		}
		t.Skip("boto3 does not import here")
	}
	addr := freePort(t)
	c := startCluster(t, withArgs("--s3", addr))
	k := s3KeyAdd(t, c, "py", "--role", "rw")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "python3", "-c", boto3Script, "http://"+addr, k.ID, k.Secret).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "OK" {
		t.Errorf("boto3 (%v):\n%s", err, out)
	}
}
