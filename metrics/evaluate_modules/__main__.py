"""`python -m metrics.evaluate_modules`: the path of each of the project's evaluate modules."""
from metrics.evaluate_modules import MODULES, module_path

if __name__ == "__main__":
    for name in MODULES:
        print(f"{name}\t{module_path(name)}")
