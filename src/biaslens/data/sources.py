"""Where benchmark files come from: pinned public URLs with sha256, or a local copy.

``biaslens datasets download NAME`` fetches a dataset's files from their repository pinned to
a commit, checks each sha256 and stores them under the data dir (default: the user cache dir).
``--data-dir`` or ``BIASLENS_DATA_DIR`` point at a local copy instead; the layout is
``DATA_DIR/NAME/FILE`` (the layout of the project's shared dataset folder).
"""

from __future__ import annotations

import hashlib
import json
import os
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from biaslens.common import atomic
from biaslens.common.files import read_text
from biaslens.common.hashing import sha256_file as _sha256_file
from biaslens.errors import BiaslensError

PACKAGE_FILES = Path(__file__).resolve().parent / "files"
"""Data files shipped inside the package (templates, name lists, lexicons)."""

ENV_DATA_DIR = "BIASLENS_DATA_DIR"


@dataclass(frozen=True)
class RemoteDataset:
    name: str
    base_url: str  # pinned to a commit
    files: dict[str, tuple[str, str]]  # local name -> (path under base_url, sha256)
    license: str


REMOTE: dict[str, RemoteDataset] = {
    "winogender": RemoteDataset(
        "winogender",
        "https://raw.githubusercontent.com/rudinger/winogender-schemas/"
        "1c7f8b481ad8a234b41e9f76a424d6e856e13f7f/data",
        {
            "templates.tsv": (
                "templates.tsv",
                "496f2e2dc77296bcebcdd8865a8dc5715ce22b772de9abb5f531d5b3114c48a0",
            ),
            "occupations-stats.tsv": (
                "occupations-stats.tsv",
                "3f7f37c16381a70571356982ea7fe613ac700ad04a6d3b19b9f2be18248df567",
            ),
            "all_sentences.tsv": (
                "all_sentences.tsv",
                "bd69da16bf228cb8df63fd0843aec2d8b5c36a7f21bf8c7b168bcc83932556c8",
            ),
        },
        "MIT",
    ),
    "unqover": RemoteDataset(
        "unqover",
        "https://raw.githubusercontent.com/allenai/unqover/3e47969b78acc0de436f9d17c9ab1b2f6a108ff0",
        {
            "word_lists/slots/religion_noact": (
                "word_lists/slots/religion_noact",
                "2bb683ebab729554e11aca02de511b443ade6d186f70f61c52a151220df113fa",
            ),
            "word_lists/slots/ethnicity_noact": (
                "word_lists/slots/ethnicity_noact",
                "8ee8da4f0fff82d31959a464adc6cf495c17d2dea81949e8daa027063f5f9e5d",
            ),
            "word_lists/slots/gender_noact": (
                "word_lists/slots/gender_noact",
                "d575a912dde76fdacf4e083a3cbf42a0e64c7c79b8ce6f5a11db3fda657a46ea",
            ),
            "word_lists/slots/country_noact": (
                "word_lists/slots/country_noact",
                "95c5260ee32c463846e26896ec476df69ecc67874a90743a36668430441fa287",
            ),
            "word_lists/nouns/subjects/religion": (
                "word_lists/nouns/subjects/religion",
                "6b22fa2e9fa1e212d75290f0063d822e23db28eaeae58d0e3f51b641f483f4eb",
            ),
            "word_lists/nouns/subjects/ethnicity": (
                "word_lists/nouns/subjects/ethnicity",
                "a2008f4362cde3d48d99ad000471fdd5aa8b3d05f1e4a114b321413b0dd89158",
            ),
            "word_lists/nouns/subjects/female": (
                "word_lists/nouns/subjects/female",
                "40aed064f32bb31b8675832b52fc9782c6064759b4d42d3e8b37c5271cf3cc88",
            ),
            "word_lists/nouns/subjects/male": (
                "word_lists/nouns/subjects/male",
                "c358a107602926bcd60e8e48baa75ca6acfbc6094c5b7fe42fc8a5680e366a47",
            ),
            "word_lists/nouns/subjects/country": (
                "word_lists/nouns/subjects/country",
                "4806e08b279f099f56e1ba5859f71e4360c24260b7fd0b456aac1ac252d85281",
            ),
            "word_lists/slots/religion_noact_lm": (
                "word_lists/slots/religion_noact_lm",
                "f32a75b7c77b5108f9f233b0f0b8f92041b159a79020ac9ab1f8cde8fd062d74",
            ),
            "word_lists/slots/ethnicity_noact_lm": (
                "word_lists/slots/ethnicity_noact_lm",
                "543abaedf193ec966ab42355e11ec0bded7b2341ad116552da62e61f88ed6ec0",
            ),
            "word_lists/slots/gender_noact_lm": (
                "word_lists/slots/gender_noact_lm",
                "63d3840805c700eedb7f37ab96e9bd3da304137e41f6df5d93a75415df13c992",
            ),
            "word_lists/slots/country_noact_lm": (
                "word_lists/slots/country_noact_lm",
                "73a3eaad4c8c13b2da3e411df6822cb4bbe98fb3d4f92f990add4c22f0e6d61f",
            ),
            "word_lists/nouns/subjects/religion_roberta": (
                "word_lists/nouns/subjects/religion_roberta",
                "0c0589d5b7a3a1c28352f35ba8e99cca7d91d9fe3778fdb6b265c59b48acfa3f",
            ),
            "word_lists/nouns/subjects/religion_bert": (
                "word_lists/nouns/subjects/religion_bert",
                "6b22fa2e9fa1e212d75290f0063d822e23db28eaeae58d0e3f51b641f483f4eb",
            ),
            "word_lists/nouns/subjects/ethnicity_roberta": (
                "word_lists/nouns/subjects/ethnicity_roberta",
                "ff5379801c2c9b3c20dccdc6d77e91e6f646fdb6d08e215fd9b77364578ab7ce",
            ),
            "word_lists/nouns/subjects/ethnicity_bert": (
                "word_lists/nouns/subjects/ethnicity_bert",
                "ff5379801c2c9b3c20dccdc6d77e91e6f646fdb6d08e215fd9b77364578ab7ce",
            ),
            "word_lists/nouns/subjects/female_roberta": (
                "word_lists/nouns/subjects/female_roberta",
                "d61a78d03b6e644903f122da4eb5f5d2b330ed5b923bf993567a0be0102861f1",
            ),
            "word_lists/nouns/subjects/female_bert": (
                "word_lists/nouns/subjects/female_bert",
                "c069ba753e29bdedb69cc37a74e5c2a716fe1b4ab2551ef4ba63062f17f174d7",
            ),
            "word_lists/nouns/subjects/male_roberta": (
                "word_lists/nouns/subjects/male_roberta",
                "137c94631ffe515eabc4cb382445c6356cfc8fc6b3a16a8fa5039737c1f465f7",
            ),
            "word_lists/nouns/subjects/male_bert": (
                "word_lists/nouns/subjects/male_bert",
                "a8154d642e06a34851a89b9871c0d8be8142aaa0d2f2070d3d93e7ed00604727",
            ),
            "word_lists/nouns/subjects/country_roberta": (
                "word_lists/nouns/subjects/country_roberta",
                "1918e48ade75b630521143054f084ca69b4ebaa090acde9ac701aea8e080806d",
            ),
            "word_lists/nouns/subjects/country_bert": (
                "word_lists/nouns/subjects/country_bert",
                "9a9d4d99f1739454d4861dbe70e4bc46f9b30425cada3bf0d951b57c5dbd4436",
            ),
            "word_lists/activities/biased_religion": (
                "word_lists/activities/biased_religion",
                "c7152d144ccf983316f4f7a47d8e3457f6c2670d35efce16bd0fba5fb5013592",
            ),
            "word_lists/activities/biased_ethnicity": (
                "word_lists/activities/biased_ethnicity",
                "c7152d144ccf983316f4f7a47d8e3457f6c2670d35efce16bd0fba5fb5013592",
            ),
            "word_lists/activities/occupation_rev1": (
                "word_lists/activities/occupation_rev1",
                "2922baf88fa18267c46776c36fb09d30a21112abe4e15b867973d8585773ea77",
            ),
            "word_lists/activities/biased_country": (
                "word_lists/activities/biased_country",
                "a7b92310efeec39dd11583d0df137f0f8907938c89cb7df8f4ac6f0af8d8043f",
            ),
        },
        "Apache-2.0",
    ),
    "lei": RemoteDataset(
        "lei",
        "https://raw.githubusercontent.com/allenai/ethical-interventions/6c499c6b965bd12433ebdffedde2a1d1639fe0ee",
        {
            "word_lists/slots/religion_noact": (
                "word_lists/slots/religion_noact",
                "2bb683ebab729554e11aca02de511b443ade6d186f70f61c52a151220df113fa",
            ),
            "word_lists/slots/ethnicity_noact": (
                "word_lists/slots/ethnicity_noact",
                "8ee8da4f0fff82d31959a464adc6cf495c17d2dea81949e8daa027063f5f9e5d",
            ),
            "word_lists/slots/gender_noact": (
                "word_lists/slots/gender_noact",
                "d575a912dde76fdacf4e083a3cbf42a0e64c7c79b8ce6f5a11db3fda657a46ea",
            ),
            "word_lists/slots/country_noact": (
                "word_lists/slots/country_noact",
                "95c5260ee32c463846e26896ec476df69ecc67874a90743a36668430441fa287",
            ),
            "word_lists/nouns/subjects/religion": (
                "word_lists/nouns/subjects/religion",
                "6b22fa2e9fa1e212d75290f0063d822e23db28eaeae58d0e3f51b641f483f4eb",
            ),
            "word_lists/nouns/subjects/ethnicity": (
                "word_lists/nouns/subjects/ethnicity",
                "e23f2626ba8f6816e278fed71a78ca77fa40a32bde51f25e41426bcc19c5481c",
            ),
            "word_lists/nouns/subjects/female": (
                "word_lists/nouns/subjects/female",
                "201cb95f983f2146c268beed67b476e299766c57f90796b0f625bf28945f1872",
            ),
            "word_lists/nouns/subjects/male": (
                "word_lists/nouns/subjects/male",
                "2cfc42cf794c6957245bc40749c1d416aa6a7b7e2318020a77ce81ded565c4e3",
            ),
            "word_lists/nouns/subjects/country": (
                "word_lists/nouns/subjects/country",
                "4806e08b279f099f56e1ba5859f71e4360c24260b7fd0b456aac1ac252d85281",
            ),
            "word_lists/activities/biased_religion": (
                "word_lists/activities/biased_religion",
                "5b022d5043ba4065f844c2a74a4f37e0df040d251e96a66314aab4b37bf0975d",
            ),
            "word_lists/activities/biased_ethnicity": (
                "word_lists/activities/biased_ethnicity",
                "5b022d5043ba4065f844c2a74a4f37e0df040d251e96a66314aab4b37bf0975d",
            ),
            "word_lists/activities/occupation_rev1": (
                "word_lists/activities/occupation_rev1",
                "2922baf88fa18267c46776c36fb09d30a21112abe4e15b867973d8585773ea77",
            ),
            "word_lists/activities/biased_country": (
                "word_lists/activities/biased_country",
                "a7b92310efeec39dd11583d0df137f0f8907938c89cb7df8f4ac6f0af8d8043f",
            ),
            "interventions/religion_interventions.json": (
                "interventions/religion_interventions.json",
                "f2587f338db5ab4907e4d59a622f210c8d7421e9e50757e4639a2a81881d5c11",
            ),
            "interventions/ethnicity_interventions.json": (
                "interventions/ethnicity_interventions.json",
                "8250bb801c1e82d2fb6f6e23934c179c1fe113b66fb812a7058103f579f873ee",
            ),
            "interventions/gender_interventions.json": (
                "interventions/gender_interventions.json",
                "41231c670bb5246319de9ee0c33ce8538722f449a471897782fcfaa963958832",
            ),
            "data/underspecified/religion/addedbias_train_64_squad.json": (
                "data/underspecified/religion/addedbias_train_64_squad.json",
                "f38fbfd639af67f973394b8921beaf8944d01754a5e94e03c7747404d3bfeece",
            ),
            "data/underspecified/religion/addedbias_train_256_squad.json": (
                "data/underspecified/religion/addedbias_train_256_squad.json",
                "b999f9ee78c56c2f4f355d53d0fe4ad27e59c73cc56497b6f5cbf34e7ece32a5",
            ),
            "data/underspecified/religion/addedbias_train_1024_squad.json": (
                "data/underspecified/religion/addedbias_train_1024_squad.json",
                "75cd725811c8c8c30060212260ea4371420207e4a5f4f6b6c2bda834e0d85fbe",
            ),
            "data/underspecified/religion/addedbias_train_4096_squad.json": (
                "data/underspecified/religion/addedbias_train_4096_squad.json",
                "13913680cb97f210e1b1eee4ab44337118c21a64a64cf8ece2daff5db322c2fc",
            ),
            "data/underspecified/religion/addedbias_noniid_dev_squad.json": (
                "data/underspecified/religion/addedbias_noniid_dev_squad.json",
                "46063e9e34dcd498b65e43c13c34061974686cc66ddc9163d4efe13c3acec805",
            ),
            "data/underspecified/religion/addedbias_noniid_test_squad.json": (
                "data/underspecified/religion/addedbias_noniid_test_squad.json",
                "6615e2c4253aeb8b93da30a8a18ace2ca38bbb8c34d87fd20a778447936fcbe1",
            ),
            "data/underspecified/ethnicity/addedbias_noniid_test_squad.json": (
                "data/underspecified/ethnicity/addedbias_noniid_test_squad.json",
                "4451bf3a1a61717f93864e6f1a90e5254f83bae3f60b4ce85c0f62d9a41c815b",
            ),
            "data/underspecified/gender/addedbias_noniid_test_squad.json": (
                "data/underspecified/gender/addedbias_noniid_test_squad.json",
                "ec26f314661e351369eba1ed357587d4a7b2c98686deff60bb249217c0392510",
            ),
            "data/specified/extraMalewithIntvs-sample.source.json": (
                "data/addextra/extraMalewithIntvs-sample.source.json",
                "0e1e67e827335bf568d6b0be3bea878d6f5af3f5eb5ebe31dbcc27ef32506b1b",
            ),
        },
        "Apache-2.0",
    ),
}


SIB_COMMIT = "812af8cad6b2ad1fa62f107440702f2fd902b8c2"
"""2dot71mily/sib_paper, the SIB paper's reference code and released outputs (no license: its
files are fetched for the user's own use, never shipped with biaslens)."""
REMOTE["sib-simplified"] = RemoteDataset(
    "sib-simplified",
    f"https://raw.githubusercontent.com/2dot71mily/sib_paper/{SIB_COMMIT}"
    "/winogender_schema_evaluation_set",
    {
        "all_sentences_g_id.tsv": (
            "all_sentences_g_id.tsv",
            "9dd8efb91c2d8074109f7dec65cf630bb2e6d1c62d3e97277ed5d67bb407632f",
        )
    },
    "none stated (fetched from the authors' repository for your own use)",
)


@dataclass(frozen=True)
class RemoteArchive:
    """Many files of one repository at a commit: its tarball, of which ``members`` (folders)
    are kept; verified by ``tree_sha256``, the sha256 of the sorted lines
    ``"<path>\t<sha256 of the file>\n"`` of every kept file."""

    name: str
    url: str
    members: tuple[str, ...]
    tree_sha256: str
    files: int
    license: str


ARCHIVES: dict[str, RemoteArchive] = {
    "sib-outputs": RemoteArchive(
        "sib-outputs",
        f"https://codeload.github.com/2dot71mily/sib_paper/tar.gz/{SIB_COMMIT}",
        ("data/detect_wino_raw", "data/detect_wino_mod_raw"),
        "b0e3d58245aed5eaa81de82d5c0509213c34778110f3c8fd2734d9b5a66a81ca",
        24075,
        "none stated (the authors' released model outputs, fetched for your own use)",
    )
}
VERIFIED = ".biaslens-verified"


def tree_sha256(folder: Path) -> tuple[str, int]:
    """The archive check of :class:`RemoteArchive` over every file below ``folder``."""
    digest = hashlib.sha256()
    files = sorted(p for p in Path(folder).rglob("*") if p.is_file() and p.name != VERIFIED)
    for path in files:
        line = f"{path.relative_to(folder).as_posix()}\t{_sha256_file(path)}\n"
        digest.update(line.encode())
    return digest.hexdigest(), len(files)


def data_dir(explicit: Path | str | None = None) -> Path:
    """``explicit`` if given, else ``$BIASLENS_DATA_DIR``, else the user cache dir."""
    if explicit is not None:
        return Path(explicit)
    if os.environ.get(ENV_DATA_DIR):
        return Path(os.environ[ENV_DATA_DIR])
    from biaslens.common.paths import cache_root

    return cache_root() / "datasets"


def locate(name: str, explicit: Path | str | None = None) -> Path:
    """The folder holding dataset ``name``'s files; a clear error says how to get them."""
    if name in ARCHIVES:
        folder = data_dir(explicit) / name
        if not (folder / VERIFIED).is_file():
            raise BiaslensError(
                f"dataset {name!r} not found in {folder}: run `biaslens datasets download "
                f"{name}`, or pass --data-dir / set {ENV_DATA_DIR} to a folder holding {name}/"
            )
        return folder
    if name not in REMOTE:
        raise BiaslensError(f"unknown dataset {name!r}; known: {', '.join([*REMOTE, *ARCHIVES])}")
    folder = data_dir(explicit) / name
    missing = [f for f in REMOTE[name].files if not (folder / f).is_file()]
    if missing:
        raise BiaslensError(
            f"dataset {name!r} not found in {folder} (missing {', '.join(missing)}): run "
            f"`biaslens datasets download {name}`, or pass --data-dir / set {ENV_DATA_DIR} to a "
            f"folder holding {name}/{missing[0]}"
        )
    return folder


def read_json(path: Path | str, what: str):
    """Parse a JSON file; a missing file or bad JSON is an error naming ``what`` / file:line."""
    path = Path(path)
    text = read_text(path, what, max_line=None)  # JSON may hold a whole file on one line
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise BiaslensError(f"{path}:{error.lineno}: not valid JSON ({error.msg})") from None
    except RecursionError:
        raise BiaslensError(f"{path}: JSON nested too deeply") from None


def sha256_file(path: Path) -> str:
    """The file's sha256; a missing file or a folder is a clear error."""
    path = Path(path)
    if not path.is_file():
        raise BiaslensError(
            f"{path}: file not found" if not path.exists() else f"{path}: not a file"
        )
    return _sha256_file(path)


def download_archive(spec: RemoteArchive, folder: Path, url: str | None = None) -> Path:
    """Fetch a pinned tarball, keep its ``members``, check the tree hash, then mark it
    verified; a mismatch leaves nothing behind."""
    import shutil
    import tarfile
    import tempfile

    url = url or spec.url
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{spec.name}-", dir=folder.parent))
    try:
        archive = staging / "archive.tar.gz"
        try:
            with urllib.request.urlopen(url, timeout=120) as response, open(archive, "wb") as out:
                shutil.copyfileobj(response, out)
        except OSError as error:
            raise BiaslensError(f"cannot fetch {url}: {error}") from None
        kept = staging / "kept"
        try:
            with tarfile.open(archive) as tar:
                for member in tar.getmembers():
                    path = member.name.split("/", 1)[1] if "/" in member.name else ""
                    if not member.isfile() or not path.startswith(
                        tuple(m + "/" for m in spec.members)
                    ):
                        continue
                    target = kept / path
                    if ".." in Path(path).parts:
                        continue
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with tar.extractfile(member) as source, open(target, "wb") as out:
                        shutil.copyfileobj(source, out)
        except tarfile.TarError as error:
            raise BiaslensError(f"{url}: not a readable tar.gz archive ({error})") from None
        actual, count = tree_sha256(kept) if kept.exists() else ("", 0)
        if actual != spec.tree_sha256:
            raise BiaslensError(
                f"{url}: the {count} extracted files do not match the pinned tree sha256 "
                f"({actual or 'no files'} != {spec.tree_sha256})"
            )
        (kept / VERIFIED).write_text(spec.tree_sha256)
        if folder.exists():
            shutil.rmtree(folder)
        kept.rename(folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def download(name: str, explicit: Path | str | None = None, base_url: str | None = None) -> Path:
    """Fetch dataset ``name`` (pinned URLs), verify every sha256, store atomically."""
    if name in ARCHIVES:
        return download_archive(ARCHIVES[name], data_dir(explicit) / name, base_url)
    if name not in REMOTE:
        raise BiaslensError(f"unknown dataset {name!r}; known: {', '.join(REMOTE)}")
    spec = REMOTE[name]
    folder = data_dir(explicit) / name
    for local, (remote, expected) in spec.files.items():
        url = f"{(base_url or spec.base_url).rstrip('/')}/{remote}"
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                payload = response.read()
        except OSError as error:
            raise BiaslensError(f"cannot fetch {url}: {error}") from None
        actual = hashlib.sha256(payload).hexdigest()
        if actual != expected:
            raise BiaslensError(f"{url}: sha256 {actual} does not match the pinned {expected}")
        atomic.write_bytes(folder / local, payload)
    return folder
