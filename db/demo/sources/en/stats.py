"""Small helpers for daily weather statistics."""


def to_fahrenheit(celsius_values):
    # Convert every Celsius reading in the list to Fahrenheit and return a new list
    return [c * 9 / 5 + 32 for c in celsius_values]


def moving_average(values, window):
    # Return the average of each window of consecutive values; shorter input gives an empty list
    if window <= 0:
        raise ValueError("window must be positive")
    if len(values) < window:
        return []
    return [sum(values[i:i + window]) / window for i in range(len(values) - window + 1)]
