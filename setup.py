"""locktune: install the `locktune` command and build the native parts through CMake.

`pip install .` configures and builds the one CMake build (Ninja) in build/cmake (kept between
installs, so rebuilds are incremental), installs it into build/stage, and ships that tree inside
the package as locktune/_native: liblocktune, liblocktune-prof.so, locktune-extract, the
headers, the semantic patches and locktune.pc.  Nothing needs an environment variable to be
found afterwards.

Extra CMake arguments: LOCKTUNE_CMAKE_ARGS="-DLOCKTUNE_WERROR=ON -DLLVM_MAJOR=16".
"""

import os
import shlex
import shutil
import subprocess

from setuptools import Distribution, find_packages, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildNative(build_py):
    """build_py that first builds and stages the CMake project."""

    def run(self):
        build_dir = os.path.join(HERE, "build", "cmake")
        stage_dir = os.path.join(HERE, "build", "stage")
        extra = shlex.split(os.environ.get("LOCKTUNE_CMAKE_ARGS", ""))
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
            subprocess.check_call(
                [
                    "cmake",
                    "-S",
                    HERE,
                    "-B",
                    build_dir,
                    *generator,
                    "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                ]
                + extra
            )
        elif extra:
            subprocess.check_call(["cmake", "-S", HERE, "-B", build_dir, *extra])
        subprocess.check_call(["cmake", "--build", build_dir])
        if os.path.isdir(stage_dir):
            shutil.rmtree(stage_dir)
        subprocess.check_call(["cmake", "--install", build_dir, "--prefix", stage_dir])
        super().run()
        target = os.path.join(self.build_lib, "locktune", "_native")
        if os.path.isdir(target):
            shutil.rmtree(target)
        shutil.copytree(stage_dir, target, symlinks=True)


class NativeDistribution(Distribution):
    """The wheel carries native code: mark it platform-specific."""

    def has_ext_modules(self):
        return True


setup(
    name="locktune",
    version="0.1.0",
    description="Find the locks that hold a C program back, rewrite them, run each on the right algorithm",
    packages=find_packages(include=["locktune", "locktune.*"]),
    package_data={"locktune": ["templates/*"]},
    python_requires=">=3.11",
    install_requires=["click>=8.1", "pyelftools>=0.29"],
    extras_require={
        "test": ["pytest>=7", "ruff>=0.4"],
    },
    entry_points={"console_scripts": ["locktune=locktune.cli:main"]},
    cmdclass={"build_py": BuildNative},
    distclass=NativeDistribution,
    zip_safe=False,
)
