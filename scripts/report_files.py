"""What the report scripts (compress_report.py, fidelity_report.py) write into a sweep folder: the markdown
report, and a gnuplot script drawn to its PNG where gnuplot is installed (scripts/setup.sh installs it)."""
import os
import shutil
import subprocess


def write_report(folder, name, lines, plot_script):
    """Writes NAME.md from `lines` and NAME.gp from `plot_script` into `folder`, then draws NAME.gp."""
    with open(os.path.join(folder, name + ".md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(folder, name + ".gp"), "w") as f:
        f.write(plot_script)
    if shutil.which("gnuplot"):
        subprocess.run(["gnuplot", name + ".gp"], cwd=folder, check=True)
