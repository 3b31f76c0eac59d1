"""The CI recipe of docs/team.md, end to end against a bare remote (issue 25):
every `run:` step of docs/ci/palinode-review.yml, executed as a forge runner
would (bash -eo pipefail, its env, the workflow's inputs), except the forge's
own steps (checkout, install, posting a comment). The plan job publishes each
pending request's plan on the review branch; the apply job applies exactly the
reviewed plan and pushes, and refuses any other."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers import ROOT, git, make_git_store

from test_team import FILES

WORKFLOW = ROOT / "docs/ci/palinode-review.yml"
def runner_env() -> dict[str, str]:
    """The environment as the test has it (its private XDG cache included), without the fixed git identity."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_AUTHOR_", "GIT_COMMITTER_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"  # palinode-audit installed
    return env


def run_job(job: str, workspace: Path, temp: Path, inputs: dict[str, str] | None = None,
            install: dict[str, str] | None = None) -> list[str]:
    """Run the job's steps in ``workspace``; the ids of the steps run. Raises on a failed step.
    The install step runs only when ``install`` gives its settings (PALINODE_AUDIT_REPO, ..._COMMIT);
    otherwise the palinode-audit under test is on PATH already."""
    spec = yaml.safe_load(WORKFLOW.read_text())
    temp.mkdir(parents=True, exist_ok=True)  # a runner makes its RUNNER_TEMP
    github_path = temp / "github_path"
    github_path.touch()
    env = {**runner_env(), **spec.get("env", {}), **(install or {}), "RUNNER_TEMP": str(temp),
           "GITHUB_ACTOR": "reviewer-jo", "GITHUB_SHA": git(workspace, "rev-parse", "HEAD").strip(),
           "GITHUB_WORKSPACE": str(workspace), "GITHUB_PATH": str(github_path)}
    ran = []
    for step in spec["jobs"][job]["steps"]:
        if "uses" in step or step.get("id", "").startswith("forge-") or (step["id"] == "install" and install is None):
            continue  # the forge's own part: checkout, its API
        # an input as given; a secret or variable as on a forge where none is set (empty)
        step_env = {k: re.sub(r"\$\{\{\s*(inputs|secrets|vars)\.(\w+)\s*\}\}",
                              lambda m: (inputs or {}).get(m.group(2), "") if m.group(1) == "inputs" else "", str(v))
                    for k, v in step.get("env", {}).items()}
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                              cwd=workspace, env={**env, **step_env}, capture_output=True, text=True)
        if proc.returncode != 0:
            raise StepFailed(step["id"], proc.stderr)
        ran.append(step["id"])
        # as a runner does: folders a step appends to $GITHUB_PATH come first on later steps' PATH
        added = [line for line in github_path.read_text().splitlines() if line]
        env["PATH"] = os.pathsep.join([*reversed(added), runner_env()["PATH"]])
    return ran


class StepFailed(Exception):
    def __init__(self, step: str, stderr: str):
        super().__init__(f"{step}: {stderr}")
        self.step, self.stderr = step, stderr


@pytest.fixture
def forge(tmp_path):
    origin = make_git_store(tmp_path / "origin-work", FILES)
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(origin), str(bare)], check=True)
    return bare


def checkout(bare: Path, where: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(bare), str(where)], check=True)
    return where


def review_comment(bare: Path, tmp: Path) -> dict:
    """What a reviewer reads on the forge: the review branch's index of plans."""
    return json.loads(subprocess.run(["git", "-C", str(bare), "show", "palinode-review:index.json"],
                                     capture_output=True, text=True, check=True).stdout)


def test_plans_are_published_then_exactly_the_reviewed_one_is_applied_and_pushed(forge, tmp_path):
    ran = run_job("plan", checkout(forge, tmp_path / "ci-plan"), tmp_path / "t1")
    assert ran == ["pack", "publish"]
    index = review_comment(forge, tmp_path)
    tea = next(e for e in index["requests"] if e["request"] == "insights/forget-tea.md")
    comment = subprocess.run(["git", "-C", str(forge), "show", "palinode-review:comment.md"],
                             capture_output=True, text=True, check=True).stdout
    assert tea["plan_sha256"] in comment and "oolong" not in comment.lower() and "tea" not in comment.lower()

    ran = run_job("apply", checkout(forge, tmp_path / "ci-apply"), tmp_path / "t2",
                  {"rid": tea["rid"], "plan_sha256": tea["plan_sha256"], "review": "https://forge.example/pr/7"})
    assert ran == ["apply", "trust", "push"]
    reviewer = checkout(forge, tmp_path / "reviewer")
    assert "status: archived" in (reviewer / "insights/pref-tea.md").read_text()
    ledger = [json.loads(line) for line in (reviewer / ".palinode-audit/ledger.jsonl").read_text().splitlines()]
    applied = [e for e in ledger if e["action"] == "apply"]
    assert len(applied) == 1 and applied[0]["request"] == "insights/forget-tea.md"
    assert applied[0]["decided_by"] == "reviewer-jo <reviewer-jo@users.noreply.invalid>"
    assert "https://forge.example/pr/7" in applied[0]["note"]
    audit = subprocess.run([sys.executable, "-m", "palinode_core", "--json", "integrity", str(reviewer)],
                           capture_output=True, text=True, env=runner_env())
    assert json.loads(audit.stdout)["problems"] == []


def test_a_plan_other_than_the_reviewed_one_is_refused_and_nothing_pushed(forge, tmp_path):
    run_job("plan", checkout(forge, tmp_path / "ci-plan"), tmp_path / "t1")
    tea = next(e for e in review_comment(forge, tmp_path)["requests"] if e["request"] == "insights/forget-tea.md")
    before = subprocess.run(["git", "-C", str(forge), "rev-parse", "main"], capture_output=True, text=True).stdout
    with pytest.raises(StepFailed, match="not the plan that was reviewed"):
        run_job("apply", checkout(forge, tmp_path / "ci-a"), tmp_path / "t2",
                {"rid": tea["rid"], "plan_sha256": "0" * 64})
    with pytest.raises(StepFailed, match="hex"):
        run_job("apply", checkout(forge, tmp_path / "ci-b"), tmp_path / "t3",
                {"rid": "../../x", "plan_sha256": tea["plan_sha256"]})
    # the target changed on main after the review: the saved plan is stale, nothing is written
    editor = checkout(forge, tmp_path / "editor")
    target = editor / "insights/pref-tea.md"
    target.write_text(target.read_text() + "\nI switched to green tea in June.\n")
    git(editor, "commit", "-qam", "edit")
    git(editor, "push", "-q")
    moved = subprocess.run(["git", "-C", str(forge), "rev-parse", "main"], capture_output=True, text=True).stdout
    assert moved != before
    with pytest.raises(StepFailed) as refused:
        run_job("apply", checkout(forge, tmp_path / "ci-c"), tmp_path / "t4",
                {"rid": tea["rid"], "plan_sha256": tea["plan_sha256"]})
    assert "pref-tea.md" in refused.value.stderr
    after = subprocess.run(["git", "-C", str(forge), "rev-parse", "main"], capture_output=True, text=True).stdout
    assert after == moved, "nothing was pushed"


def test_review_pack_writes_nothing_inside_the_store(forge, tmp_path):
    clone = checkout(forge, tmp_path / "ci")
    proc = subprocess.run([sys.executable, "-m", "palinode_core", "review-pack", str(clone), "--out",
                           str(clone / "review"), "--lexical"], capture_output=True, text=True, env=runner_env())
    assert proc.returncode != 0 and "inside the store" in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert not (clone / "review").exists() and git(clone, "status", "--porcelain") == ""


def test_the_rid_is_taken_as_the_review_comment_writes_it(forge, tmp_path):
    """The comment heads each request `## r:<rid>` and the input asks for the
    retraction id (r:…): that form is applied, as the bare hex digits are."""
    run_job("plan", checkout(forge, tmp_path / "ci-plan"), tmp_path / "t1")
    tea = next(e for e in review_comment(forge, tmp_path)["requests"] if e["request"] == "insights/forget-tea.md")
    comment = subprocess.run(["git", "-C", str(forge), "show", "palinode-review:comment.md"],
                             capture_output=True, text=True, check=True).stdout
    assert f"r:{tea['rid']}" in comment
    triggers = yaml.safe_load(WORKFLOW.read_text())[True]  # YAML 1.1 reads the key `on` as true
    assert "r:" in triggers["workflow_dispatch"]["inputs"]["rid"]["description"]
    with pytest.raises(StepFailed, match="hex"):  # still only a retraction id: nothing else gets through
        run_job("apply", checkout(forge, tmp_path / "ci-a"), tmp_path / "t2",
                {"rid": "r:../../x", "plan_sha256": tea["plan_sha256"]})
    ran = run_job("apply", checkout(forge, tmp_path / "ci-b"), tmp_path / "t3",
                  {"rid": f"r:{tea['rid']}", "plan_sha256": tea["plan_sha256"]})
    assert ran == ["apply", "trust", "push"]
    assert "status: archived" in (checkout(forge, tmp_path / "reviewer") / "insights/pref-tea.md").read_text()

def test_the_tool_is_installed_from_its_repository_at_a_pinned_commit_never_by_name():
    """No step installs a package by name from an index (palinode-core is not published: anyone could claim
    the name); the placeholder commit, a short id or a branch name is refused before anything is fetched."""
    spec = yaml.safe_load(WORKFLOW.read_text())
    runs = [step["run"] for job in spec["jobs"].values() for step in job["steps"] if "run" in step]
    installs = [line for run in runs for line in run.splitlines() if re.search(r"\bpip\b.*\binstall\b", line)]
    assert installs and all(re.search(r'install --quiet -c "\$src/constraints.txt" "\$src/core"$', line)
                            for line in installs), installs
    assert "palinode-core" not in yaml.safe_dump(spec["env"])
    for commit in (spec["env"]["PALINODE_AUDIT_COMMIT"], "b15ee91", "main", "0" * 39 + "g"):
        step = next(s for s in spec["jobs"]["plan"]["steps"] if s.get("id") == "install")
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                              env={**runner_env(), "PALINODE_AUDIT_REPO": "/nonexistent", "RUNNER_TEMP": "/nonexistent",
                                   "PALINODE_AUDIT_COMMIT": commit}, capture_output=True, text=True)
        assert proc.returncode == 2 and "40 hex digits" in proc.stderr, (commit, proc.stderr)


def test_the_apply_job_trusts_the_checkout_before_it_pushes():
    """docs/team.md: sync ignores the store's own git config, where a forge's checkout keeps its
    credentials (http.extraheader), until the store is trusted."""
    ids = [step.get("id") for step in yaml.safe_load(WORKFLOW.read_text())["jobs"]["apply"]["steps"]]
    assert ids.index("install") < ids.index("apply") < ids.index("trust") < ids.index("push")


@pytest.mark.install
@pytest.mark.xdist_group("install")
def test_the_plan_job_runs_the_tool_it_installed_from_the_repository(forge, tmp_path):
    head = git(ROOT, "rev-parse", "HEAD").strip()
    temp = tmp_path / "t1"
    ran = run_job("plan", checkout(forge, tmp_path / "ci-plan"), temp,
                  install={"PALINODE_AUDIT_REPO": ROOT.as_uri(), "PALINODE_AUDIT_COMMIT": head})
    assert ran == ["install", "pack", "publish"]
    installed = temp / "palinode-audit/bin"
    assert (temp / "github_path").read_text().split() == [str(installed)]
    committed = subprocess.run(["git", "-C", str(ROOT), "show", f"{head}:core/palinode_core/VERSION"],
                               capture_output=True, text=True, check=True).stdout.strip()
    version = subprocess.run([str(installed / "palinode-audit"), "--version"], capture_output=True, text=True)
    assert version.stdout.strip() == f"palinode-audit {committed}"
    assert (temp / "palinode-audit-src/core").is_dir()
    assert git(temp / "palinode-audit-src", "rev-parse", "HEAD").strip() == head
    assert review_comment(forge, tmp_path)["requests"]
